package dev.limiter.protocol;

/**
 * A sliding window, estimated from two fixed windows (aligned to the UTC epoch, as
 * {@link FixedWindow}): a request at a point {@code e} ns into the current window is allowed iff
 * {@code cur + ceil(prev x (period - e) / period) + cost <= limit}, {@code prev} and {@code cur}
 * being the tokens granted in the previous and the current window. The previous window is weighted
 * by the share of it the trailing period still covers, so the budget comes back gradually instead
 * of all at a boundary. A key's state is both counts ({@code prev << 32 | cur}); the window they
 * belong to is the one holding the time stored with them. Integer arithmetic throughout (128-bit
 * products), so every replica computes the same bits. Immutable.
 *
 * <p>Bound: each fixed window grants at most {@code limit}, and a trailing period grants exactly
 * the estimate when the previous window's grants were spread evenly over it. When they were not,
 * a trailing period may hold up to {@code cur + prev}: at worst (the whole previous window's
 * limit granted at its very end) close to 2 x limit, the same worst case as a fixed window but
 * reached only by that shape of traffic. The limit is at most 2^31 - 1 per window.
 */
public final class SlidingWindow extends WindowLimit
{
    /** Largest limit: each count has 32 bits of the state and never exceeds the limit. */
    public static final long MAX_LIMIT = (1L << 31) - 1;
    private static final long COUNT_MASK = 0xFFFF_FFFFL;

    private final long periodNanos;

    /**
     * @param limit       tokens per period, 1 to {@link #MAX_LIMIT}
     * @param periodNanos period in nanoseconds, at least 1
     */
    public SlidingWindow(final long limit, final long periodNanos)
    {
        super(limit);
        if (limit > MAX_LIMIT)
        {
            throw new IllegalArgumentException("a sliding window's limit must be 1 to " + MAX_LIMIT + " tokens per period, was " + limit +
                ": use FIXED_WINDOW or TOKEN_BUCKET for more");
        }
        if (periodNanos < 1)
        {
            throw new IllegalArgumentException("a window must last at least 1 ns, was " + periodNanos);
        }
        this.periodNanos = periodNanos;
    }

    /** The state of a key with {@code previous} tokens granted in the previous window and {@code current} in this one. */
    public static long state(final long previous, final long current)
    {
        return previous << 32 | current;
    }

    /** Tokens granted in the previous window, from a state. */
    public static long previous(final long state)
    {
        return state >>> 32;
    }

    /** Tokens granted in the current window, from a state. */
    public static long current(final long state)
    {
        return state & COUNT_MASK;
    }

    /** Period in nanoseconds. */
    public long periodNanos()
    {
        return periodNanos;
    }

    @Override
    public long fullState()
    {
        return 0;
    }

    @Override
    public long refill(final long counts, final long lastNanos, final long nowNanos)
    {
        final long windows = (windowStart(nowNanos, periodNanos) - windowStart(lastNanos, periodNanos)) / periodNanos;
        if (windows <= 0)
        {
            return counts;
        }
        return windows == 1 ? state(current(counts), 0) : 0;
    }

    @Override
    public long available(final long counts, final long nowNanos)
    {
        final long remainingOfPeriod = periodNanos - Math.floorMod(nowNanos, periodNanos);
        return limit - current(counts) - ceilMulDiv(previous(counts), remainingOfPeriod, periodNanos);
    }

    @Override
    public long charge(final long counts, final long costUnits)
    {
        return counts + costUnits; // the current window's count, in the low half (never beyond the limit)
    }

    @Override
    public long nanosUntil(final long counts, final long targetUnits, final long nowNanos)
    {
        if (targetUnits > limit)
        {
            // Never available (a reserve's floor with a large cost): the soonest the window is empty.
            return nanosUntilFull(counts, nowNanos);
        }
        final long into = Math.floorMod(nowNanos, periodNanos);
        final long toNextWindow = periodNanos - into;
        final long previous = previous(counts);
        final long current = current(counts);
        // In this window: the previous one's weight falls until prev x remaining <= spare x period.
        final long spare = limit - current - targetUnits;
        if (spare >= 0)
        {
            if (spare >= previous)
            {
                return 0; // even the whole previous window's weight fits
            }
            final long remainingAllowed = floorMulDiv(spare, periodNanos, previous); // below the period: spare < previous
            if (remainingAllowed >= toNextWindow)
            {
                return 0;
            }
            if (remainingAllowed >= 1)
            {
                return toNextWindow - remainingAllowed;
            }
        }
        // In the next window (this one's count becomes the previous one, nothing taken since).
        final long nextSpare = limit - targetUnits;
        if (nextSpare >= current)
        {
            return toNextWindow;
        }
        return toNextWindow + periodNanos - floorMulDiv(nextSpare, periodNanos, current);
    }

    @Override
    public long nanosUntilFull(final long counts, final long nowNanos)
    {
        return nanosUntil(counts, limit, nowNanos);
    }

    @Override
    public SlidingWindow share(final int index, final int shares)
    {
        checkShare(limit, index, shares, "window's rate");
        return new SlidingWindow(TokenBucket.shareOf(limit, index, shares), periodNanos);
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
        return "SLIDING_WINDOW";
    }

    @Override
    public String toString()
    {
        return "SlidingWindow{limit=" + limit + ", periodNanos=" + periodNanos + '}';
    }

    /** floor(a x b / d) for a, b >= 0 and d > 0, exact, when the result fits a long (128-bit product). */
    static long floorMulDiv(final long a, final long b, final long d)
    {
        final long product = a * b;
        if (Math.multiplyHigh(a, b) == 0 && product >= 0)
        {
            return product / d; // fits 63 bits: the common case (counts times a sub-day window)
        }
        // A double estimate, then corrected by exact 128-bit comparisons (a step or two at most).
        long q = (long)((double)a * (double)b / (double)d);
        while (q > 0 && compareProducts(q, d, a, b) > 0)
        {
            q--;
        }
        while (compareProducts(q + 1, d, a, b) <= 0)
        {
            q++;
        }
        return q;
    }

    /** ceil(a x b / d) for a, b >= 0 and d > 0, exact, when the result fits a long. */
    static long ceilMulDiv(final long a, final long b, final long d)
    {
        if (a == 0)
        {
            return 0;
        }
        final long product = a * b;
        if (Math.multiplyHigh(a, b) == 0 && product >= 0)
        {
            final long q = product / d;
            return q * d == product ? q : q + 1;
        }
        final long q = floorMulDiv(a, b, d);
        return compareProducts(q, d, a, b) == 0 ? q : q + 1;
    }

    /** Compares a x b with c x d, all four non-negative, without overflow. */
    static int compareProducts(final long a, final long b, final long c, final long d)
    {
        final long high = Math.multiplyHigh(a, b);
        final long otherHigh = Math.multiplyHigh(c, d);
        return high != otherHigh ? Long.compare(high, otherHigh) : Long.compareUnsigned(a * b, c * d);
    }
}
