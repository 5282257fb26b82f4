package dev.limiter.client;

import dev.limiter.protocol.ReasonCode;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Fast local rejection: after the cluster refused a descriptor with "retry after T", the same
 * descriptor asking for at least the same cost is refused here until T. Only refusals are made
 * locally, so the cluster's budgets are never exceeded by it; a refusal is a little early to lift
 * at most when a policy change or a refund happened within T.
 */
final class LocalRejections
{
    /** Descriptors remembered at most; beyond that the table starts again. */
    private static final int MAX_ENTRIES = 50_000;

    private record Refusal(long untilNanos, int cost, Decision decision)
    {
    }

    private final ConcurrentHashMap<Descriptor, Refusal> refusals = new ConcurrentHashMap<>();
    private final LongAdder count = new LongAdder();

    void denied(final Descriptor descriptor, final int cost, final Decision decision, final long nowNanos)
    {
        if (decision.reason() != ReasonCode.RATE_LIMITED || decision.retryAfterNanos() <= 0)
        {
            return; // only "not now, at T" is worth remembering
        }
        if (refusals.size() >= MAX_ENTRIES)
        {
            refusals.clear();
        }
        refusals.put(descriptor, new Refusal(nowNanos + decision.retryAfterNanos(), cost, decision));
    }

    /** The local refusal, or null when the cluster must be asked. */
    Decision stillDenied(final Descriptor descriptor, final int cost, final long nowNanos)
    {
        final Refusal refusal = refusals.get(descriptor);
        if (refusal == null)
        {
            return null;
        }
        final long left = refusal.untilNanos() - nowNanos;
        if (left <= 0)
        {
            refusals.remove(descriptor, refusal);
            return null;
        }
        if (cost < refusal.cost())
        {
            return null; // a smaller request may fit: ask
        }
        count.increment();
        final Decision d = refusal.decision();
        final long elapsed = d.retryAfterNanos() - left;
        return new Decision(false, ReasonCode.RATE_LIMITED, d.remaining(), d.limit(), left, Math.max(left, d.resetAfterNanos() - elapsed),
            d.policyId(), d.policyVersion(), d.windowSeconds(), false);
    }

    long count()
    {
        return count.sum();
    }
}
