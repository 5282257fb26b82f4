package dev.limiter.cli.pilot;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes what a pilot run found: {@code pilot.json} (every verdict and figure, for machines),
 * {@code summary.html} (the same for people, one self-contained page) and the console summary.
 */
final class PilotOutput
{
    private static final Gson GSON = new GsonBuilder().setPrettyPrinting().disableHtmlEscaping()
        .serializeSpecialFloatingPointValues().create();

    private PilotOutput()
    {
    }

    /** The whole run as one JSON document. */
    static Map<String, Object> document(final Findings f, final List<ExitCriteria.Criterion> criteria, final int exit)
    {
        final Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("startedAt", Instant.ofEpochMilli(f.startedAtMillis).toString());
        doc.put("minutes", f.minutes);
        doc.put("phaseSeconds", f.phaseSeconds);
        doc.put("cluster", ordered("startedByThePilot", f.ownCluster, "servers", f.servers, "admin", f.admins));
        doc.put("backend", ordered("uri", f.backendUri, "workers", f.trace.backend().workers(), "serviceMillis",
            f.trace.backend().serviceMillis(), "maxQueue", f.trace.backend().maxQueue(), "maxWaitMillis",
                f.trace.backend().maxWaitMillis(),
            "capacityPerSecond", f.trace.backend().capacityPerSecond()));
        doc.put("policy", ordered("id", f.trace.policy().id(), "route", f.trace.route(), "rate",
            f.trace.policy().rate(), "burst", f.trace.policy().burst(), "owner", f.trace.policy().owner(),
            "versionsByPhase", f.versions));
        final List<Object> phases = new ArrayList<>();
        f.phases.values().forEach(p -> phases.add(phase(f, p)));
        doc.put("phases", phases);
        doc.put("beforeAfter", beforeAfter(f));
        doc.put("shadow", shadow(f));
        final List<Object> drills = new ArrayList<>();
        for (final PilotDrills.Outcome d : f.drills)
        {
            final Map<String, Object> drill = new LinkedHashMap<>();
            drill.put("drill", d.drill());
            drill.put("verdict", d.verdict());
            drill.put("evidence", d.evidence());
            drill.put("reason", d.reason());
            drills.add(drill);
        }
        doc.put("drills", drills);
        doc.put("falseRejections", falseRejections(f.falseRejections));
        doc.put("report", ordered("file", f.reportFile, "note", f.reportNote));
        final List<Object> verdicts = new ArrayList<>();
        for (final ExitCriteria.Criterion c : criteria)
        {
            verdicts.add(ordered("id", c.id(), "requirement", c.requirement(), "verdict", c.verdict(), "detail",
                c.detail()));
        }
        doc.put("criteria", verdicts);
        doc.put("abortedBecause", f.abortedBecause);
        doc.put("exitCode", exit);
        return doc;
    }

    private static Map<String, Object> falseRejections(final FalseRejectionReview.Result review)
    {
        final Map<String, Object> m = new LinkedHashMap<>();
        if (review == null)
        {
            m.put("note", "not reviewed");
            return m;
        }
        m.put("candidates", review.candidates());
        m.put("byCategory", review.byCategory());
        m.put("withoutAReason", review.unexplained());
        m.put("appeals", review.appeals());
        m.put("examples", review.examples());
        return m;
    }

    private static Map<String, Object> phase(final Findings f, final PhaseTraffic.Result p)
    {
        final Map<String, Object> phase = new LinkedHashMap<>();
        phase.put("phase", p.phase());
        phase.put("seconds", p.seconds());
        phase.put("policyVersion", f.versions.getOrDefault(p.phase(), 0L));
        phase.put("sent", p.played().sent());
        phase.put("playerMaxLateMillis", p.played().maxLateNanos() / 1e6);
        phase.put("backendMaxQueueDepth", p.backend().maxQueueDepth());
        phase.put("total", figures(PhaseFigures.total(p)));
        final Map<String, Object> tenants = new LinkedHashMap<>();
        for (final Map.Entry<String, TenantTally> entry : p.tenants().entrySet())
        {
            final Map<String, Object> tenant = figures(PhaseFigures.of(p, entry.getKey()));
            synchronized (entry.getValue())
            {
                tenant.put("wellBehaved", f.trace.wellBehaved(entry.getKey()));
                tenant.put("modelRefused", entry.getValue().modelRefused);
                tenant.put("decidedBy", List.copyOf(entry.getValue().versions));
            }
            tenants.put(entry.getKey(), tenant);
        }
        phase.put("tenants", tenants);
        return phase;
    }

    private static Map<String, Object> figures(final PhaseFigures x)
    {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("offered", x.offered());
        m.put("rejected", x.denied());
        m.put("rejectionRate", round(x.rejectionRate()));
        m.put("decidedBySdkAlone", x.degraded());
        m.put("limiterCallsFailed", x.limiterFailed());
        m.put("decisionP99Millis", round(x.decisionP99Millis()));
        m.put("backendRequests", x.backendRequests());
        m.put("backend5xx", x.backend5xx());
        m.put("backend5xxRate", round(x.backendErrorRate()));
        m.put("backendP99Millis", round(x.backendP99Millis()));
        m.put("backendUnreachable", x.unreachable());
        return m;
    }

    private static Map<String, Object> beforeAfter(final Findings f)
    {
        final Map<String, Object> m = new LinkedHashMap<>();
        final PhaseTraffic.Result before = f.phase(Findings.BASELINE);
        final PhaseTraffic.Result after = f.phase(Findings.ALL_TENANTS);
        m.put("before", Findings.BASELINE);
        m.put("after", Findings.ALL_TENANTS);
        if (before == null || after == null)
        {
            m.put("note", "not both phases ran");
            return m;
        }
        m.put("total", ordered("before", figures(PhaseFigures.total(before)), "after",
            figures(PhaseFigures.total(after))));
        final Map<String, Object> tenants = new LinkedHashMap<>();
        for (final String tenant : before.tenants().keySet())
        {
            tenants.put(tenant, ordered("before", figures(PhaseFigures.of(before, tenant)), "after",
                figures(PhaseFigures.of(after, tenant))));
        }
        m.put("byTenant", tenants);
        m.put("split", "by tenant; one route (" + f.trace.route() + ") and one region (this machine) in the pilot");
        return m;
    }

    private static Map<String, Object> shadow(final Findings f)
    {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("nodesWouldDeny", f.shadowWouldDeny);
        m.put("nodesWouldAllow", f.shadowWouldAllow);
        if (!f.shadowMetricsNote.isEmpty())
        {
            m.put("metricsNote", f.shadowMetricsNote);
        }
        final PhaseTraffic.Result shadow = f.phase(Findings.SHADOW);
        final PhaseTraffic.Result enforced = f.phase(Findings.ALL_TENANTS);
        if (shadow != null)
        {
            final Map<String, Object> tenants = new LinkedHashMap<>();
            for (final Map.Entry<String, TenantTally> entry : shadow.tenants().entrySet())
            {
                final Map<String, Object> row = new LinkedHashMap<>();
                synchronized (entry.getValue())
                {
                    row.put("offeredInShadow", entry.getValue().offered);
                    row.put("predictedRejections", entry.getValue().modelRefused);
                }
                if (enforced != null)
                {
                    final PhaseFigures e = PhaseFigures.of(enforced, entry.getKey());
                    row.put("offeredEnforced", e.offered());
                    row.put("enforcedRejections", e.denied());
                }
                tenants.put(entry.getKey(), row);
            }
            m.put("byTenant", tenants);
        }
        m.put("comparison", f.comparison != null ? f.comparison : f.comparisonNote);
        return m;
    }

    static void writeJson(final Path file, final Map<String, Object> document) throws IOException
    {
        Files.writeString(file, GSON.toJson(document) + "\n", StandardCharsets.UTF_8);
    }

    static JsonElement tree(final Object value)
    {
        return GSON.toJsonTree(value);
    }

    /** The console summary: each criterion, then the before/after table by tenant. */
    static void console(final PrintStream out, final Findings f, final List<ExitCriteria.Criterion> criteria,
        final Path dir,
                        final int exit)
    {
        out.println();
        out.println("limiter pilot: exit criteria");
        for (final ExitCriteria.Criterion c : criteria)
        {
            out.printf(Locale.ROOT, "  %-8s %-32s %s%n", c.verdict(), c.id(), c.verdict().equals("PASS")
                ? c.requirement() : c.requirement() + ": " + FalseRejectionReview.oneLine(c.detail()));
        }
        final PhaseTraffic.Result before = f.phase(Findings.BASELINE);
        final PhaseTraffic.Result after = f.phase(Findings.ALL_TENANTS);
        if (before != null && after != null)
        {
            out.println();
            out.println("limiter pilot: before (baseline, no enforcement) -> after (policy enforced for all), " +
                "backend's own figures");
            out.printf(Locale.ROOT, "  %-14s %18s %22s %20s%n", "tenant", "backend 5xx", "backend p99 ms",
                "rejection rate");
            for (final String tenant : before.tenants().keySet())
            {
                row(out, tenant, PhaseFigures.of(before, tenant), PhaseFigures.of(after, tenant));
            }
            row(out, "all", PhaseFigures.total(before), PhaseFigures.total(after));
        }
        if (f.falseRejections != null)
        {
            out.println();
            out.println("limiter pilot: false-rejection candidates " + f.falseRejections.candidates() + " " +
                f.falseRejections.byCategory() + ", without a reason " + f.falseRejections.unexplained()
                    + "; appeals: " +
                f.falseRejections.appeals());
        }
        out.println("limiter pilot: comparison: " + (f.comparison != null ? "see pilot.json shadow.comparison"
            : f.comparisonNote));
        out.println("limiter pilot: report: " + (f.reportFile.isEmpty() ? "" : dir.resolve(f.reportFile) + "; ")
            + f.reportNote);
        out.println("limiter pilot: wrote " + dir.resolve("pilot.json") + " and " + dir.resolve("summary.html"));
        out.println("limiter pilot: " + (exit == 0 ? "every criterion PASS or not run for a stated reason (exit 0)" :
            "a criterion FAILED (exit 1)" + (f.abortedBecause.isEmpty() ? "" : ": " + f.abortedBecause)));
    }

    private static void row(final PrintStream out, final String tenant, final PhaseFigures b, final PhaseFigures a)
    {
        out.printf(Locale.ROOT, "  %-14s %7.1f%% -> %5.1f%% %9.1f -> %9.1f %8.1f%% -> %6.1f%%%n", tenant,
            100 * b.backendErrorRate(), 100 * a.backendErrorRate(), b.backendP99Millis(), a.backendP99Millis(),
            100 * b.rejectionRate(), 100 * a.rejectionRate());
    }

    /** A map of the key-value pairs in the order given (JSON readers see the fields in that order). */
    private static Map<String, Object> ordered(final Object... keysAndValues)
    {
        final Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2)
        {
            m.put((String)keysAndValues[i], keysAndValues[i + 1]);
        }
        return m;
    }

    private static double round(final double value)
    {
        return Math.round(value * 10_000) / 10_000.0;
    }
}
