package dev.limiter.cli.pilot;

import org.HdrHistogram.Histogram;

import java.util.Map;

/**
 * The figures the pilot compares for one phase, for one tenant or all of them: what the backend
 * answered (its own counts: requests, 5xx and p99 from arrival to answer) and what the limiter did
 * (offered, refused, the share refused, decision p99, decisions the SDK made alone).
 */
record PhaseFigures(long offered, long denied, long degraded, long limiterFailed, double decisionP99Millis,
                    long backendRequests, long backend5xx, double backendP99Millis, long unreachable)
{
    /** Refused by the limiter, of what was offered. */
    double rejectionRate()
    {
        return offered == 0 ? 0 : (double)denied / offered;
    }

    /** 5xx answers of the backend, of its requests. */
    double backendErrorRate()
    {
        return backendRequests == 0 ? 0 : (double)backend5xx / backendRequests;
    }

    /** One tenant's figures in {@code phase}. */
    static PhaseFigures of(final PhaseTraffic.Result phase, final String tenant)
    {
        final TenantTally tally = phase.tenants().get(tenant);
        final BackendStats.Row row = phase.backend().byTenant().getOrDefault(tenant, new BackendStats.Row());
        synchronized (tally)
        {
            return new PhaseFigures(tally.offered, tally.denied(), tally.allowedLocally + tally.deniedLocally,
                tally.limiterFailed, tally.decisionP99Millis(), row.requests(), row.errors(), row.p99Millis(),
                tally.backendUnreachable);
        }
    }

    /** Every tenant's figures together in {@code phase}. */
    static PhaseFigures total(final PhaseTraffic.Result phase)
    {
        long offered = 0;
        long denied = 0;
        long degraded = 0;
        long unreachable = 0;
        long failed = 0;
        final Histogram decisions = new Histogram(60_000_000_000L, 2);
        for (final Map.Entry<String, TenantTally> entry : phase.tenants().entrySet())
        {
            final TenantTally tally = entry.getValue();
            synchronized (tally)
            {
                offered += tally.offered;
                denied += tally.denied();
                degraded += tally.allowedLocally + tally.deniedLocally;
                unreachable += tally.backendUnreachable;
                failed += tally.limiterFailed;
                decisions.add(tally.decisionLatency);
            }
        }
        final BackendStats.Row all = phase.backend().total();
        return new PhaseFigures(offered, denied, degraded, failed, decisions.getTotalCount() == 0 ? 0
            : decisions.getValueAtPercentile(99) / 1e6, all.requests(), all.errors(), all.p99Millis(), unreachable);
    }
}
