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
public class FixedWindow extends WindowLimit
{
    private final long periodNanos;

    /**
     * @param limit       tokens per window, at least 1
     * @param periodNanos window length in nanoseconds, at least 1
     */
    public FixedWindow(final long limit, final long periodNanos)
    {
        super(limit);
        if (periodNanos < 1)
        {
            throw new IllegalArgumentException("a window must last at least 1 ns, was " + periodNanos);
        }
        this.periodNanos = periodNanos;
    }

    /** Window length in nanoseconds (for calendar windows, their average length). */
    public final long periodNanos()
    {
        return periodNanos;
    }

    /** Which window holds the UTC instant {@code nanos}: windows of the period, counted from the epoch. */
    protected long windowIndex(final long nanos)
    {
        return Math.floorDiv(nanos, periodNanos);
    }

    /** When window {@code index} begins (UTC ns since the epoch). */
    protected long windowStartNanos(final long index)
    {
        return index * periodNanos;
    }

    @Override
    public final long fullState()
    {
        return limit;
    }

    @Override
    public final long refill(final long left, final long lastNanos, final long nowNanos)
    {
        // A later window starts afresh; the same one (or an earlier time: clamped) keeps what is left.
        return windowIndex(nowNanos) > windowIndex(lastNanos) ? limit : left;
    }

    @Override
    public final long available(final long left, final long nowNanos)
    {
        return left;
    }

    @Override
    public final long charge(final long left, final long costUnits)
    {
        return left - costUnits;
    }

    @Override
    public final long nanosUntil(final long left, final long targetUnits, final long nowNanos)
    {
        return left >= targetUnits ? 0 : windowStartNanos(windowIndex(nowNanos) + 1) - nowNanos;
    }

    @Override
    public final long nanosUntilFull(final long left, final long nowNanos)
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
    public final long windowSeconds()
    {
        return -Math.floorDiv(-periodNanos, 1_000_000_000L);
    }

    @Override
    public final TokenBucket.Rate asTokenBucket()
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
        return getClass().getSimpleName() + "{limit=" + limit + ", periodNanos=" + periodNanos + '}';
    }
}
