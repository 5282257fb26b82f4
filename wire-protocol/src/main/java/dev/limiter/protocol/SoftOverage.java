package dev.limiter.protocol;

/**
 * A limit whose capacity may be exceeded by a share of itself: requests that fit the limit are
 * allowed as usual; those that fit only into the extra {@code percent} of its capacity (a bucket's
 * burst, a window's limit) are allowed too, answered {@link ReasonCode#SOFT_OVERAGE} and counted,
 * for billing and alerting; beyond that, refused. The key's state simply goes past the limit
 * (a bucket below zero, a window above its count), so what was taken in overage is paid back
 * before the limit allows again. Immutable; decisions are the wrapped limit's otherwise.
 *
 * <p>Bound: over any interval, at most what the wrapped limit grants plus {@code percent} of its
 * capacity once (a token bucket: burst x (1 + percent/100) + rate x T), and for a window at most
 * limit x (1 + percent/100) in each window.
 */
public final class SoftOverage extends Limit
{
    private final Limit limit;
    private final int percent;
    private final long overageUnits;

    /**
     * @param limit   the limit that is soft
     * @param percent 1 to 100: how much of its capacity may be taken beyond it
     */
    public SoftOverage(final Limit limit, final int percent)
    {
        if (percent < 1 || percent > 100)
        {
            throw new IllegalArgumentException("an overage must be 1 to 100 percent of the limit, was " + percent);
        }
        this.limit = limit;
        this.percent = percent;
        final long burst = limit.burstTokens();
        // percent of the burst, rounded down, without overflow: at most the burst, so state stays in range.
        this.overageUnits = (burst / 100 * percent + burst % 100 * percent / 100) * limit.unitsPerToken();
    }

    /** The percentage of the capacity that may be taken beyond it. */
    public int percent()
    {
        return percent;
    }

    @Override
    public long overageUnits()
    {
        return overageUnits;
    }

    @Override
    public boolean wallClock()
    {
        return limit.wallClock();
    }

    @Override
    public long unitsPerToken()
    {
        return limit.unitsPerToken();
    }

    @Override
    public long burstTokens()
    {
        return limit.burstTokens();
    }

    @Override
    public long burstUnits()
    {
        return limit.burstUnits();
    }

    @Override
    public long fullState()
    {
        return limit.fullState();
    }

    @Override
    public long refill(final long state, final long lastNanos, final long nowNanos)
    {
        return limit.refill(state, lastNanos, nowNanos);
    }

    @Override
    public long available(final long state, final long nowNanos)
    {
        return limit.available(state, nowNanos);
    }

    @Override
    public long charge(final long state, final long costUnits)
    {
        return limit.charge(state, costUnits);
    }

    @Override
    public long nanosUntil(final long state, final long targetUnits, final long nowNanos)
    {
        return limit.nanosUntil(state, targetUnits, nowNanos);
    }

    @Override
    public long nanosUntilFull(final long state, final long nowNanos)
    {
        return limit.nanosUntilFull(state, nowNanos);
    }

    @Override
    public boolean isFull(final long state, final long nowNanos)
    {
        return limit.isFull(state, nowNanos);
    }

    @Override
    public SoftOverage share(final int index, final int shares)
    {
        return new SoftOverage(limit.share(index, shares), percent);
    }

    @Override
    public long windowSeconds()
    {
        return limit.windowSeconds();
    }

    @Override
    public TokenBucket.Rate asTokenBucket()
    {
        return limit.asTokenBucket();
    }

    @Override
    public String algorithm()
    {
        return limit.algorithm() + " with " + percent + "% soft overage";
    }

    @Override
    public String toString()
    {
        return "SoftOverage{" + limit + ", percent=" + percent + '}';
    }
}
