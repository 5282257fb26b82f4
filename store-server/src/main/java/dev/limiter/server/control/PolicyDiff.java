package dev.limiter.server.control;

import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.Rollout;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** How a policy and a change to it read in the audit trail and in answers: pure functions. */
final class PolicyDiff
{
    private PolicyDiff()
    {
    }

    static boolean samePolicy(final Policy a, final Policy b)
    {
        return a.toBuilder().clearVersion().clearReason().build().equals(b.toBuilder().clearVersion().clearReason().build());
    }

    static String describe(final Policy p)
    {
        final String limit = p.getMaxConcurrent() != 0 ? "at most " + p.getMaxConcurrent() + " leases at once (TTL " + leaseTtl(p) + ")" :
            "rate " + p.getRate() + " per " + period(p) + ", burst " + burst(p);
        return limit + ", scope " + p.getScope() +
            ", " + p.getConsistency() + ", selector " + p.getSelector().toString().replace('\n', ' ').trim();
    }

    static String rolloutDetail(final Policy p)
    {
        final Rollout r = p.getRollout();
        return "rollout to " + r.getPercent() + "% of tenants" + (r.getTenantsCount() > 0 ? " + " + String.join(",", r.getTenantsList()) : "") +
            ", others on version " + r.getFallback().getVersion() + (r.getOthersInShadow() ? " with this one in shadow" : "");
    }

    /** Field by field, what differs from {@code before} to {@code after}. */
    static String diff(final Policy before, final Policy after)
    {
        final List<String> changes = new ArrayList<>();
        change(changes, "rate", before.getRate(), after.getRate());
        change(changes, "period", period(before), period(after));
        change(changes, "burst", burst(before), burst(after));
        change(changes, "algorithm", before.getAlgorithm(), after.getAlgorithm());
        change(changes, "maxConcurrent", before.getMaxConcurrent(), after.getMaxConcurrent());
        change(changes, "leaseTtl", leaseTtl(before), leaseTtl(after));
        change(changes, "excess", before.getExcess(), after.getExcess());
        change(changes, "limits", before.getLimitsCount(), after.getLimitsCount());
        change(changes, "scope", before.getScope(), after.getScope());
        change(changes, "consistency", before.getConsistency(), after.getConsistency());
        change(changes, "failureMode", before.getFailureMode(), after.getFailureMode());
        change(changes, "mode", before.getMode(), after.getMode());
        change(changes, "priority", before.getPriority(), after.getPriority());
        change(changes, "owner", before.getOwner(), after.getOwner());
        change(changes, "selector", before.getSelector().toString().replace('\n', ' ').trim(),
            after.getSelector().toString().replace('\n', ' ').trim());
        return changes.isEmpty() ? "no change of limits" : String.join("; ", changes);
    }

    static void change(final List<String> changes, final String field, final Object before, final Object after)
    {
        if (!Objects.equals(before, after))
        {
            changes.add(field + " " + before + " -> " + after);
        }
    }

    static String period(final Policy p)
    {
        return p.hasPeriod() ? p.getPeriod().getSeconds() + (p.getPeriod().getNanos() == 0 ? "" : "." + p.getPeriod().getNanos()) + "s" : "1s";
    }

    static String leaseTtl(final Policy p)
    {
        return p.getMaxConcurrent() == 0 ? "-" : p.hasLeaseTtl() ?
            p.getLeaseTtl().getSeconds() + (p.getLeaseTtl().getNanos() == 0 ? "" : "." + p.getLeaseTtl().getNanos()) + "s" : "60s";
    }

    static long burst(final Policy p)
    {
        return p.getBurst() == 0 ? p.getRate() : p.getBurst();
    }
}
