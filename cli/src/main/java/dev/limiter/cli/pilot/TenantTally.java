package dev.limiter.cli.pilot;

import org.HdrHistogram.Histogram;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * One tenant's traffic in one phase, as the pilot's caller saw it: what it offered, what the limiter
 * decided (a node, or the SDK alone while no node answered), what the backend answered, latencies,
 * the policy versions that decided, and the rejections kept for the false-rejection review.
 */
final class TenantTally
{
    /** Rejections kept per tenant and phase; beyond it they are counted only. */
    static final int MAX_KEPT_REJECTIONS = 2_000;
    private static final long MAX_NANOS = 60_000_000_000L;

    /** One refused request of this tenant. */
    record Rejection(long atMillis, String reason, boolean degraded, String policyId, long policyVersion,
        boolean modelRefusedToo)
    {
    }

    long offered;
    long allowedByNode;
    long deniedByNode;
    long allowedLocally;
    long deniedLocally;
    long limiterFailed;
    long backendOk;
    long backendErrors;
    long backendUnreachable;
    /** Requests the pilot's own model of the policy under test would refuse (its prediction). */
    long modelRefused;
    long rejectionsNotKept;
    final Histogram decisionLatency = new Histogram(MAX_NANOS, 2);
    final Histogram backendLatency = new Histogram(MAX_NANOS, 2);
    final Set<String> versions = new TreeSet<>();
    final List<Rejection> rejections = new ArrayList<>();

    synchronized void decided(final boolean allowed, final boolean degraded, final long nanos, final String policyId,
                              final long policyVersion)
    {
        decisionLatency.recordValue(Math.max(0, Math.min(nanos, MAX_NANOS)));
        if (degraded)
        {
            if (allowed)
            {
                allowedLocally++;
            }
            else
            {
                deniedLocally++;
            }
        }
        else
        {
            versions.add(policyId + " v" + policyVersion);
            if (allowed)
            {
                allowedByNode++;
            }
            else
            {
                deniedByNode++;
            }
        }
    }

    synchronized void rejected(final Rejection rejection)
    {
        if (rejections.size() < MAX_KEPT_REJECTIONS)
        {
            rejections.add(rejection);
        }
        else
        {
            rejectionsNotKept++;
        }
    }

    synchronized void limiterFailed()
    {
        limiterFailed++;
    }

    synchronized void backendAnswered(final int status, final long nanos)
    {
        if (status >= 500)
        {
            backendErrors++;
        }
        else
        {
            backendOk++;
        }
        backendLatency.recordValue(Math.max(0, Math.min(nanos, MAX_NANOS)));
    }

    synchronized void backendUnreachable()
    {
        backendUnreachable++;
    }

    synchronized boolean noneRefusedByNode()
    {
        return deniedByNode == 0;
    }

    synchronized long denied()
    {
        return deniedByNode + deniedLocally;
    }

    /** Refused by the limiter, of what was offered (0 with no traffic). */
    synchronized double rejectionRate()
    {
        return offered == 0 ? 0 : (double)denied() / offered;
    }

    synchronized double decisionP99Millis()
    {
        return decisionLatency.getTotalCount() == 0 ? 0 : decisionLatency.getValueAtPercentile(99) / 1e6;
    }
}
