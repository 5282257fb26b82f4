package dev.limiter.client;

import dev.limiter.protocol.ReasonCode;

import java.util.concurrent.atomic.LongAdder;

/**
 * Fast local rejection: after the cluster refused a descriptor with "retry after T", the same
 * descriptor asking for at least the same cost is refused here until T. Only refusals are made
 * locally, so the cluster's budgets are never exceeded by it; a refusal is a little early to lift
 * at most when a policy change or a refund happened within T. A refusal is remembered for at most
 * {@link #MAX_HOLD_NANOS} (a day's window may say "after midnight"), so a raised limit is seen
 * within that time. At most {@link #MAX_ENTRIES} descriptors are remembered (callers choose them).
 */
final class LocalRejections
{
    /**
     * Descriptors remembered at most. Past that, a new refusal takes the place of one that has
     * expired, or of one no call looked up lately, or else of one the table's clock hand reached
     * ({@link BoundedKeyTable}: at most {@value BoundedKeyTable#SCAN} looked at): forgetting a refusal
     * only sends that descriptor's next call to the cluster.
     */
    static final int MAX_ENTRIES = 50_000;
    /** Longest a refusal is repeated here without asking the cluster again. */
    static final long MAX_HOLD_NANOS = 1_000_000_000L;

    private record Refusal(long untilNanos, int cost, Decision decision)
    {
    }

    private final BoundedKeyTable<Descriptor, Refusal> refusals = new BoundedKeyTable<>(MAX_ENTRIES, BoundedKeyTable.WhenFull.EVICT,
        (refusal, now) -> now - refusal.untilNanos() >= 0 ? BoundedKeyTable.KeyFate.DROP : BoundedKeyTable.KeyFate.AGE);
    private final LongAdder count = new LongAdder();

    void denied(final Descriptor descriptor, final int cost, final Decision decision, final long nowNanos)
    {
        if (decision.reason() != ReasonCode.RATE_LIMITED || decision.retryAfterNanos() <= 0)
        {
            return; // only "not now, at T" is worth remembering
        }
        refusals.put(descriptor, new Refusal(nowNanos + Math.min(decision.retryAfterNanos(), MAX_HOLD_NANOS), cost, decision), nowNanos);
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
            return null; // the table drops it when a new refusal needs the room
        }
        if (cost < refusal.cost())
        {
            return null; // a smaller request may fit: ask
        }
        count.increment();
        final Decision d = refusal.decision();
        final long elapsed = Math.min(d.retryAfterNanos(), MAX_HOLD_NANOS) - left;
        final long retryAfter = d.retryAfterNanos() - elapsed;
        return d.repeatedRejection(retryAfter, Math.max(retryAfter, d.resetAfterNanos() - elapsed));
    }

    long count()
    {
        return count.sum();
    }

    /** Descriptors whose refusal is remembered now, expired ones included (at most {@link #MAX_ENTRIES}). */
    int remembered()
    {
        return refusals.size();
    }

    /** Refusals looked at to make room for new ones, so far. */
    long examined()
    {
        return refusals.examined();
    }
}
