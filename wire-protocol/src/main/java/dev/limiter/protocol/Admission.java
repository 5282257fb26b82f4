package dev.limiter.protocol;

/**
 * The admission rule, written once for every kind of {@link Limit}: whether a request of
 * {@code cost} tokens may go ahead against a key in {@code state} at {@code now}, what is left,
 * and when to retry. Pure: the caller loads and stores the state (a node's table, a replica
 * replaying the log, a test), so that all of them decide alike.
 *
 * <p>A request is allowed when the key has the cost available after keeping {@code floorUnits}
 * (a reserve that a request of lower priority may not spend), or within the limit's soft overage
 * ({@link ReasonCode#SOFT_OVERAGE}). Under a WAIT limit a request whose tokens will exist within the
 * longest wait is allowed and charged now ({@link ReasonCode#RESERVED}), but never out of a reserve.
 * A cost over the limit's burst can never be allowed ({@link ReasonCode#COST_EXCEEDS_BURST}).
 */
public final class Admission
{
    private Admission()
    {
    }

    /**
     * Decides one request. {@code out}'s retry-after of a refusal is exact: retried then, with
     * nothing else taken meanwhile, the request is allowed (reserved, under a WAIT limit).
     *
     * @param state      the key's state refilled to {@code nowNanos} ({@link Limit#refill}), or {@link
     * Limit#fullState()}
     * @param nowNanos   the key's time (the limit's clock)
     * @param cost       tokens asked for, at least 1
     * @param floorUnits units the key must keep after the charge; 0 for none
     * @param out        receives the outcome, at time {@code nowNanos}
     * @return the key's state after the request: charged when allowed, {@code state} otherwise
     */
    public static long decide(final Limit limit, final long state, final long nowNanos, final long cost,
        final long floorUnits,
        final Verdict out)
    {
        out.timeNanos(nowNanos);
        final long available = limit.available(state, nowNanos);
        if (cost > limit.burstTokens())
        {
            out.set(false, ReasonCode.COST_EXCEEDS_BURST, limit.wholeTokens(available), ResultCodec.NEVER,
                limit.nanosUntilFull(state, nowNanos));
            return state;
        }
        final long costUnits = limit.costUnits(cost);
        final long usable = available - floorUnits;
        // Compared as usable >= cost - overage, not usable + overage >= cost: that sum may pass 2^63.
        boolean allowed = usable >= costUnits - limit.overageUnits();
        // A WAIT limit reserves tokens that will exist within its longest wait: charged now, used later.
        final long wait = allowed || limit.maxWaitNanos() == 0 || floorUnits > 0 ? 0 :
            limit.nanosUntil(state, costUnits, nowNanos);
        allowed |= wait > 0 && wait <= limit.maxWaitNanos();
        final long after = allowed ? limit.charge(state, costUnits) : state;
        // A refused WAIT request is told when a retry would be reserved: its tokens then exist within
        // the longest wait. Out of a reserve nothing is reserved.
        final long retryAfter = allowed ? wait :
            limit.nanosUntil(state, costUnits + floorUnits - limit.overageUnits(), nowNanos) -
                (floorUnits > 0 ? 0 : limit.maxWaitNanos());
        out.set(allowed, reason(allowed, usable, costUnits, wait),
            limit.wholeTokens(Math.max(0, (allowed ? available - costUnits : available) - floorUnits)), retryAfter,
            limit.nanosUntilFull(after, nowNanos));
        return after;
    }

    private static ReasonCode reason(final boolean allowed, final long usable, final long costUnits, final long wait)
    {
        if (!allowed)
        {
            return ReasonCode.RATE_LIMITED;
        }
        return wait > 0 ? ReasonCode.RESERVED : usable >= costUnits ? ReasonCode.ALLOWED : ReasonCode.SOFT_OVERAGE;
    }
}
