package dev.limiter.cli.pilot;

import com.google.gson.JsonElement;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Everything a pilot run saw, gathered as it goes; {@link ExitCriteria} judges it and {@link PilotOutput} writes it.
 */
final class Findings
{
    static final String BASELINE = "baseline";
    static final String SHADOW = "shadow";
    static final String FIRST_TENANTS = "first-tenants";
    static final String ALL_TENANTS = "all-tenants";
    static final String AFTER_DRILLS = "after-drills";

    final Trace trace;
    final double minutes;
    final double phaseSeconds;
    final long startedAtMillis = System.currentTimeMillis();
    boolean ownCluster;
    List<String> servers = List.of();
    List<String> admins = List.of();
    String backendUri = "";
    /** The policy's version made at the start of each phase (0: not made). */
    final Map<String, Long> versions = new LinkedHashMap<>();
    final Map<String, PhaseTraffic.Result> phases = new LinkedHashMap<>();
    /**
     * limiter_shadow_decisions_total{outcome="would_deny"} of the policy over the shadow phase, all nodes; -1 unread.
     */
    long shadowWouldDeny = -1;
    long shadowWouldAllow = -1;
    String shadowMetricsNote = "";
    /** The nodes' comparison (GET /policies/{id}/compare), or null with {@link #comparisonNote} saying why. */
    JsonElement comparison;
    String comparisonNote = "";
    List<PilotDrills.Outcome> drills = new ArrayList<>();
    FalseRejectionReview.Result falseRejections;
    boolean policiesAudited;
    String policiesEvidence = "";
    String reportFile = "";
    String reportNote = "";
    /** Why the run ended early, or "". */
    String abortedBecause = "";

    Findings(final Trace trace, final double minutes, final double phaseSeconds)
    {
        this.trace = trace;
        this.minutes = minutes;
        this.phaseSeconds = phaseSeconds;
    }

    PhaseTraffic.Result phase(final String name)
    {
        return phases.get(name);
    }

    PilotDrills.Outcome drill(final String name)
    {
        return drills.stream().filter(d -> d.drill().equals(name)).findFirst().orElse(null);
    }
}
