package dev.limiter.cli.pilot;

import com.google.gson.JsonElement;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The seed's pilot exit criteria and rollout steps, each judged from what the run saw: PASS, FAIL, or
 * NOT_RUN with the reason it could not be judged here. The pilot exits 0 only when every criterion
 * is PASS or NOT_RUN with a reason.
 */
final class ExitCriteria
{
    /** One criterion: its id, what the seed asks, the verdict and what it rests on. */
    record Criterion(String id, String requirement, String verdict, String detail)
    {
        boolean acceptable()
        {
            return verdict.equals("PASS") || verdict.equals("NOT_RUN") && !detail.isBlank();
        }
    }

    private ExitCriteria()
    {
    }

    static List<Criterion> judge(final Findings f)
    {
        final List<Criterion> all = new ArrayList<>();
        all.add(shadowFirst(f));
        all.add(firstTenants(f));
        all.add(drill(f, "spike", "drill-spike",
            "After a traffic spike drill: the spiking tenant held to its limit, the others unharmed"));
        all.add(drill(f, "store-failure", "drill-store-failure",
            "After a shared-store failure drill: fail-open within the emergency "
            + "budget, fail-closed refused, no pent-up burst on recovery"));
        all.add(drill(f, "leader-kill", "drill-leader-kill",
            "After a leader kill: grants within bounds, decisions again within 1 s"));
        all.add(drill(f, "rollback", "drill-rollback",
            "After a rollback drill: the rollback in force everywhere within 1 s, audited"));
        all.add(drill(f, "hot-tenant", "drill-hot-tenant",
            "After a hot-tenant drill: the hot tenant reported and held to its bound"));
        all.add(latency(f));
        all.add(falseRejections(f));
        all.add(fallback(f));
        all.add(new Criterion("policies-owners-versions-audit", "Policies have owners, versions and audit records",
            f.policiesAudited ? "PASS" : "FAIL", f.policiesEvidence.isEmpty() ? "not checked: " + f.abortedBecause :
            f.policiesEvidence));
        all.add(benefit(f));
        return all;
    }

    private static Criterion shadowFirst(final Findings f)
    {
        final String requirement = "The new policy ran in shadow mode first and its predicted rejections were compared";
        final PhaseTraffic.Result shadow = f.phase(Findings.SHADOW);
        if (shadow == null)
        {
            return new Criterion("shadow-first", requirement, "FAIL", "the shadow phase did not run: "
                + f.abortedBecause);
        }
        long predicted = 0;
        for (final TenantTally tally : shadow.tenants().values())
        {
            synchronized (tally)
            {
                predicted += tally.modelRefused;
            }
        }
        final String comparison = f.comparison != null ? "the nodes' comparison (policy compare) answered"
            : f.comparisonNote;
        final String detail = "nodes counted " + f.shadowWouldDeny + " would-deny and " + f.shadowWouldAllow
            + " would-allow " + "decisions of the shadow version; the pilot's model predicted " + predicted
            + " rejections; " + comparison + (f.shadowMetricsNote.isEmpty() ? "" : "; " + f.shadowMetricsNote);
        // Refusals by a node: the SDK's own while no node answered (its emergency budget) are not the shadow's doing.
        final boolean noneRefused = shadow.tenants().values().stream().allMatch(TenantTally::noneRefusedByNode);
        // The shadow must predict (it counts would-deny when the model does) and must not decide (nothing refused by
        // it).
        final boolean passed = f.shadowWouldDeny >= 0 && (predicted == 0 || f.shadowWouldDeny > 0) && noneRefused;
        return new Criterion("shadow-first", requirement, passed ? "PASS" : "FAIL",
            detail + (noneRefused ? "; no node refused a request while the policy was only in shadow"
                : "; nodes refused requests while the policy was only in shadow"));
    }

    private static Criterion firstTenants(final Findings f)
    {
        final String requirement = "The policy was enabled for a few tenants first (" + String.join(", ",
            f.trace.firstTenants()) + "), then for all";
        final PhaseTraffic.Result first = f.phase(Findings.FIRST_TENANTS);
        final Long version = f.versions.get(Findings.FIRST_TENANTS);
        if (first == null || version == null || f.phase(Findings.ALL_TENANTS) == null)
        {
            return new Criterion("enabled-for-few-tenants-first", requirement, "FAIL",
                "the rollout phases did not run: " + f.abortedBecause);
        }
        final String rolled = f.trace.policy().id() + " v" + version;
        final StringBuilder detail = new StringBuilder("versions deciding per tenant: ");
        boolean passed = true;
        for (final var entry : first.tenants().entrySet())
        {
            final boolean listed = f.trace.firstTenants().contains(entry.getKey());
            final boolean onRollout;
            synchronized (entry.getValue())
            {
                onRollout = entry.getValue().versions.contains(rolled);
                detail.append(entry.getKey()).append(' ').append(entry.getValue().versions).append("; ");
            }
            passed &= listed == onRollout;
        }
        detail.append("expected ").append(rolled).append(" for the listed tenants only");
        return new Criterion("enabled-for-few-tenants-first", requirement, passed ? "PASS" : "FAIL", detail.toString());
    }

    private static Criterion drill(final Findings f, final String name, final String id, final String requirement)
    {
        final PilotDrills.Outcome outcome = f.drill(name);
        if (outcome == null)
        {
            return new Criterion(id, requirement, "FAIL", "the drill did not run: " + f.abortedBecause);
        }
        final String detail = outcome.verdict().equals("NOT_RUN") ? outcome.reason() : outcome.evidence().toString();
        return new Criterion(id, requirement, outcome.verdict(), detail);
    }

    private static Criterion latency(final Findings f)
    {
        final String requirement = String.format(Locale.ROOT,
            "After the drills, latency targets still hold: backend p99 <= %.0f ms with "
            + "at most 1%% 5xx, decision p99 <= %.0f ms", f.trace.backendP99TargetMillis(),
            f.trace.decisionP99TargetMillis());
        final PhaseTraffic.Result after = f.phase(Findings.AFTER_DRILLS);
        if (after == null)
        {
            return new Criterion("latency-targets-hold", requirement, "FAIL",
                "the phase after the drills did not run: " + f.abortedBecause);
        }
        final PhaseFigures all = PhaseFigures.total(after);
        final boolean passed = all.backendRequests() > 0
            && all.backendP99Millis() <= f.trace.backendP99TargetMillis() && all.backendErrorRate() <= 0.01
            && all.decisionP99Millis() <= f.trace.decisionP99TargetMillis();
        return new Criterion("latency-targets-hold", requirement, passed ? "PASS" : "FAIL", String.format(Locale.ROOT,
            "backend p99 %.1f ms, 5xx %d of %d (%.2f%%), decision p99 %.1f ms, %d decided by the SDK alone",
                all.backendP99Millis(),
            all.backend5xx(), all.backendRequests(), 100 * all.backendErrorRate(), all.decisionP99Millis(),
                all.degraded()));
    }

    private static Criterion falseRejections(final Findings f)
    {
        final String requirement = "Every false rejection has a reason (rejections of well-behaved tenants are the " +
            "candidates)";
        final FalseRejectionReview.Result review = f.falseRejections;
        if (review == null)
        {
            return new Criterion("false-rejections-have-reasons", requirement, "FAIL", "not reviewed: "
                + f.abortedBecause);
        }
        final String detail = review.candidates() + " candidates" + (review.byCategory().isEmpty() ? "" : " "
            + review.byCategory()) + ", " + review.unexplained() + " without a reason; appeals: " + review.appeals();
        return new Criterion("false-rejections-have-reasons", requirement, review.unexplained() == 0 ? "PASS"
            : "FAIL", detail);
    }

    private static Criterion fallback(final Findings f)
    {
        final String requirement = "Fallback budgets work (the store-failure drill's emergency budget and " +
            "fail-closed route)";
        final PilotDrills.Outcome store = f.drill("store-failure");
        if (store == null)
        {
            return new Criterion("fallback-budgets-work", requirement, "FAIL", "the store-failure drill did not run: " +
                f.abortedBecause);
        }
        if (store.verdict().equals("NOT_RUN"))
        {
            return new Criterion("fallback-budgets-work", requirement, "NOT_RUN",
                "judged by the store-failure drill, which did not run: " + store.reason());
        }
        final JsonElement local = store.evidence().get("openGrantedLocally");
        final JsonElement budget = store.evidence().get("emergencyBudget");
        final JsonElement closed = store.evidence().get("closedGrantedDuringOutage");
        final String detail = "fail-open granted locally " + local + " (budget " + budget
            + "), fail-closed granted " + closed + " during the outage; the drill: " + store.verdict();
        return new Criterion("fallback-budgets-work", requirement, store.verdict(), detail);
    }

    private static Criterion benefit(final Findings f)
    {
        final String requirement = "Proving the benefit: backend 5xx lower with the policy enforced than before it";
        final PhaseTraffic.Result before = f.phase(Findings.BASELINE);
        final PhaseTraffic.Result after = f.phase(Findings.ALL_TENANTS);
        if (before == null || after == null)
        {
            return new Criterion("benefit-backend-5xx-lower", requirement, "FAIL", "the phases did not run: "
                + f.abortedBecause);
        }
        final PhaseFigures b = PhaseFigures.total(before);
        final PhaseFigures a = PhaseFigures.total(after);
        final boolean passed = b.backend5xx() > 0 && a.backendErrorRate() < b.backendErrorRate();
        return new Criterion("benefit-backend-5xx-lower", requirement, passed ? "PASS" : "FAIL",
            String.format(Locale.ROOT,
            "5xx %.1f%% -> %.1f%%, backend p99 %.1f -> %.1f ms, rejection rate %.1f%% -> %.1f%%%s",
            100 * b.backendErrorRate(), 100 * a.backendErrorRate(), b.backendP99Millis(), a.backendP99Millis(),
            100 * b.rejectionRate(), 100 * a.rejectionRate(), b.backend5xx() == 0
            ? " (the baseline did not overload the backend: nothing to prove)" : ""));
    }
}
