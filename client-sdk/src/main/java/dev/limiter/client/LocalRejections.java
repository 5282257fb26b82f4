package dev.limiter.client;

import dev.limiter.protocol.ReasonCode;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Fast local rejection: after the cluster refused a descriptor with "retry after T", the same
 * descriptor asking for at least the same cost is refused here until T. Only refusals are made
 * locally, so the cluster's budgets are never exceeded by it; a refusal is a little early to lift
 * at most when a policy change or a refund happened within T. A refusal is remembered for at most
 * {@link #MAX_HOLD_NANOS} (a day's window may say "after midnight"), so a raised limit is seen
 * within that time.
 */
final class LocalRejections
{
    /** Descriptors remembered at most; beyond that the table starts again. */
    private static final int MAX_ENTRIES = 50_000;
    /** Longest a refusal is repeated here without asking the cluster again. */
    static final long MAX_HOLD_NANOS = 1_000_000_000L;

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
        refusals.put(descriptor, new Refusal(nowNanos + Math.min(decision.retryAfterNanos(), MAX_HOLD_NANOS), cost, decision));
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
        final long elapsed = Math.min(d.retryAfterNanos(), MAX_HOLD_NANOS) - left;
        final long retryAfter = d.retryAfterNanos() - elapsed;
        return new Decision(false, ReasonCode.RATE_LIMITED, d.remaining(), d.limit(), retryAfter, Math.max(retryAfter, d.resetAfterNanos() - elapsed),
            d.policyId(), d.policyVersion(), d.windowSeconds(), false);
    }

    long count()
    {
        return count.sum();
    }
}
