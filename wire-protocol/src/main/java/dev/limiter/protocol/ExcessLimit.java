package dev.limiter.protocol;

/**
 * A limit with a policy's handling of excess requests beyond REJECT. Immutable; decisions are the
 * wrapped limit's otherwise.
 *
 * <p>{@link #softOverage SOFT_OVERAGE}: requests that fit the limit are allowed as usual; those
 * that fit only into the extra {@code percent} of its capacity (a bucket's burst, a window's limit)
 * are allowed too, answered {@link ReasonCode#SOFT_OVERAGE} and counted, for billing and alerting;
 * beyond that, refused. The key's state simply goes past the limit (a bucket below zero, a window
 * above its count). Bound: over any interval, at most what the wrapped limit grants plus
 * {@code percent} of its capacity once (a token bucket: burst x (1 + percent/100) + rate x T), and
 * for a window at most limit x (1 + percent/100) in each window.
 *
 * <p>{@link #waiting WAIT}: a request the limit cannot take now but could within
 * {@code maxWaitNanos} (if nothing else took tokens meanwhile) is charged now, against tokens that
 * do not exist yet, and answered {@link ReasonCode#RESERVED} with the wait: the caller proceeds
 * after it. The bucket goes into debt, so later requests wait behind it: a reservation, not a race,
 * and the grants, each at the time its caller may proceed, never exceed burst + rate x T. Token
 * buckets (and GCRA) only: they refill steadily, which a reservation waits for.
 */
public final class ExcessLimit extends Limit
{
    /** Longest wait a WAIT policy may ask callers to accept. */
    public static final long MAX_WAIT_NANOS = 3_600_000_000_000L;

    private final Limit limit;
    private final int percent;
    private final long overageUnits;
    private final long maxWaitNanos;

    private ExcessLimit(final Limit limit, final int percent, final long maxWaitNanos)
    {
        this.limit = limit;
        this.percent = percent;
        final long burst = limit.burstTokens();
        // percent of the burst, rounded down, without overflow: at most the burst, so state stays in range.
        this.overageUnits = (burst / 100 * percent + burst % 100 * percent / 100) * limit.unitsPerToken();
        this.maxWaitNanos = maxWaitNanos;
    }

    /**
     * @param limit   the limit that is soft
     * @param percent 1 to 100: how much of its capacity may be taken beyond it
     */
    public static ExcessLimit softOverage(final Limit limit, final int percent)
    {
        if (percent < 1 || percent > 100)
        {
            throw new IllegalArgumentException("an overage must be 1 to 100 percent of the limit, was " + percent);
        }
        return new ExcessLimit(limit, percent, 0);
    }

    /**
     * @param limit        a token bucket or GCRA
     * @param maxWaitNanos longest wait a reservation may ask for, 1 ns to {@link #MAX_WAIT_NANOS}
     */
    public static ExcessLimit waiting(final Limit limit, final long maxWaitNanos)
    {
        if (!(limit instanceof TokenBucket.Rate || limit instanceof Gcra))
        {
            throw new IllegalArgumentException("WAIT needs a TOKEN_BUCKET or GCRA, whose steady refill a reservation waits for; " +
                limit.algorithm() + " answers with the exact retry-after instead (use REJECT)");
        }
        if (maxWaitNanos < 1 || maxWaitNanos > MAX_WAIT_NANOS)
        {
            throw new IllegalArgumentException("a WAIT policy's maxWait must be between 1ns and 1 hour, was " + maxWaitNanos + " ns");
        }
        // The debt a reservation may run up, in units, plus the burst must stay far from overflow (a
        // key's state ranges from minus the debt to the burst).
        final long unitsPerNano = limit.asTokenBucket().unitsPerNano();
        if (Math.multiplyHigh(maxWaitNanos, unitsPerNano) != 0 || maxWaitNanos * unitsPerNano > TokenBucket.MAX_UNITS - limit.burstUnits())
        {
            throw new IllegalArgumentException("a maxWait of " + maxWaitNanos + " ns at this rate is beyond exact arithmetic: " +
                "shorten maxWait");
        }
        return new ExcessLimit(limit, 0, maxWaitNanos);
    }

    /** The percentage of the capacity that may be taken beyond it (0: no soft overage). */
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
    public long maxWaitNanos()
    {
        return maxWaitNanos;
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
    public ExcessLimit share(final int index, final int shares)
    {
        return new ExcessLimit(limit.share(index, shares), percent, maxWaitNanos);
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
        return limit.algorithm() + (maxWaitNanos > 0 ? " with waits up to " + maxWaitNanos + " ns" : " with " + percent + "% soft overage");
    }

    @Override
    public String toString()
    {
        return "ExcessLimit{" + limit + ", percent=" + percent + ", maxWaitNanos=" + maxWaitNanos + '}';
    }
}
