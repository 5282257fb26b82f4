package dev.limiter.server.net;

import dev.limiter.protocol.TokenBucket;

/**
 * A token bucket guarding a rare, costly request kind (an SDK report that becomes a log entry):
 * {@link #tryTake} allows a burst, then the rate. Not thread-safe: give each owner its own, or
 * share one behind the owner's lock.
 */
public final class AdmissionBucket
{
    private final TokenBucket.Rate rate;
    private long units;
    private long lastNanos;

    /**
     * @param perSecond tokens added per second
     * @param burst     tokens held at most (and at the start)
     */
    AdmissionBucket(final long perSecond, final long burst, final long nowNanos)
    {
        this.rate = TokenBucket.rate(perSecond, 1_000_000_000L, burst);
        this.units = rate.burstUnits();
        this.lastNanos = nowNanos;
    }

    /** Takes one token at {@code nowNanos} if there is one. */
    boolean tryTake(final long nowNanos)
    {
        units = rate.refill(units, lastNanos, nowNanos);
        lastNanos = Math.max(lastNanos, nowNanos);
        if (units < rate.costUnits(1))
        {
            return false;
        }
        units -= rate.costUnits(1);
        return true;
    }
}
