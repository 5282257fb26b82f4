package dev.limiter.protocol;

/**
 * A fixed window: at most {@code limit} tokens in each window of {@code periodNanos}, windows
 * aligned to the UTC epoch (so a day's window starts at midnight UTC, an hour's on the hour). A
 * key's state is what is left of the current window's limit; the window it belongs to is the one
 * holding the time stored with it. Immutable.
 *
 * <p>Bound: each window grants at most {@code limit}; two adjacent windows may grant their limits
 * close together (up to 2 x limit within any span of one period across a boundary), as with every
 * fixed window. {@link SlidingWindow} smooths that.
 */
public final class FixedWindow extends Limit
{
    private final long limit;
    private final long periodNanos;

    /**
     * @param limit       tokens per window, at least 1
     * @param periodNanos window length in nanoseconds, at least 1
     */
    public FixedWindow(final long limit, final long periodNanos)
    {
        if (limit < 1)
        {
            throw new IllegalArgumentException("a window's limit must be at least 1 token, was " + limit);
        }
        if (periodNanos < 1)
        {
            throw new IllegalArgumentException("a window must last at least 1 ns, was " + periodNanos);
        }
        this.limit = limit;
        this.periodNanos = periodNanos;
    }

    /** Window length in nanoseconds. */
    public long periodNanos()
    {
        return periodNanos;
    }

    @Override
    public boolean wallClock()
    {
        return true;
    }

    @Override
    public long unitsPerToken()
    {
        return 1;
    }

    @Override
    public long burstTokens()
    {
        return limit;
    }

    @Override
    public long fullState()
    {
        return limit;
    }

    @Override
    public long refill(final long left, final long lastNanos, final long nowNanos)
    {
        // A later window starts afresh; the same one (or an earlier time: clamped) keeps what is left.
        return nowNanos - windowStart(lastNanos, periodNanos) >= periodNanos ? limit : left;
    }

    @Override
    public long available(final long left, final long nowNanos)
    {
        return left;
    }

    @Override
    public long charge(final long left, final long costUnits)
    {
        return left - costUnits;
    }

    @Override
    public long nanosUntil(final long left, final long targetUnits, final long nowNanos)
    {
        return left >= targetUnits ? 0 : windowStart(nowNanos, periodNanos) + periodNanos - nowNanos;
    }

    @Override
    public long nanosUntilFull(final long left, final long nowNanos)
    {
        return nanosUntil(left, limit, nowNanos);
    }

    @Override
    public FixedWindow share(final int index, final int shares)
    {
        checkShare(limit, index, shares, "window's rate");
        return new FixedWindow(TokenBucket.shareOf(limit, index, shares), periodNanos);
    }

    @Override
    public long windowSeconds()
    {
        return -Math.floorDiv(-periodNanos, 1_000_000_000L);
    }

    @Override
    public TokenBucket.Rate asTokenBucket()
    {
        return TokenBucket.approximately(limit, periodNanos, limit);
    }

    @Override
    public String algorithm()
    {
        return "FIXED_WINDOW";
    }

    @Override
    public String toString()
    {
        return "FixedWindow{limit=" + limit + ", periodNanos=" + periodNanos + '}';
    }
}
