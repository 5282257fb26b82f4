package dev.limiter.protocol;

/**
 * A concurrency limit: at most {@code maxConcurrent} leases held at once, where a grant takes a
 * lease that counts until it is {@link #release released} or expires. Immutable.
 *
 * <p>A key's state is four 16-bit counters of leases granted in consecutive granules of
 * {@link #granuleNanos()} (a third of the lease TTL), the newest in the low bits: the granule that
 * holds the time stored with the key. A lease counts while its granule is one of the last four, so
 * one never released expires between {@code ttl} and {@code 4/3 ttl} after its grant (never
 * sooner: a holder that is merely slow is never double-counted against). Thirty-two bytes per key
 * like every other kind, whatever the number of leases.
 *
 * <p>A release takes a lease's cost off its grant's granule, and from nothing else, so a release
 * that comes after its lease expired frees nothing that another holder counts on. Which lease, at
 * what cost and granted when is the node's record of it, found by the lease's random id: a
 * release frees exactly the lease it names, once (the node's table keeps the records).
 */
public final class ConcurrencyLimit extends Limit
{
    /** Most leases one key may hold (a granule's counter is 16 bits). */
    public static final int MAX_CONCURRENT = 0xFFFF;
    /** Shortest and longest lease TTL a policy may set. */
    public static final long MIN_TTL_NANOS = 1_000_000_000L;
    public static final long MAX_TTL_NANOS = 24L * 3600 * 1_000_000_000L;
    /** Granules a lease counts in: its own and the three after it. */
    static final int GRANULES = 4;
    private static final int BITS = 16;
    private static final long MASK = 0xFFFF;

    private final long maxConcurrent;
    private final long ttlNanos;
    private final long granuleNanos;

    /**
     * @param maxConcurrent leases held at once, 1 to {@link #MAX_CONCURRENT}
     * @param ttlNanos      shortest life of a lease not released, {@link #MIN_TTL_NANOS} to {@link #MAX_TTL_NANOS}
     */
    public ConcurrencyLimit(final long maxConcurrent, final long ttlNanos)
    {
        if (maxConcurrent < 1 || maxConcurrent > MAX_CONCURRENT)
        {
            throw new IllegalArgumentException("maxConcurrent must be 1 to " + MAX_CONCURRENT + ", was " + maxConcurrent);
        }
        if (ttlNanos < MIN_TTL_NANOS || ttlNanos > MAX_TTL_NANOS)
        {
            throw new IllegalArgumentException("a lease TTL must be 1s to 24h, was " + ttlNanos + " ns");
        }
        this.maxConcurrent = maxConcurrent;
        this.ttlNanos = ttlNanos;
        this.granuleNanos = -Math.floorDiv(-ttlNanos, GRANULES - 1);
    }

    /** Leases held at once. */
    public long maxConcurrent()
    {
        return maxConcurrent;
    }

    /** Shortest life of a lease not released (it expires within a third more), ns. */
    public long ttlNanos()
    {
        return ttlNanos;
    }

    /** Length of the time slices leases are counted in, ns (a third of the TTL, rounded up). */
    public long granuleNanos()
    {
        return granuleNanos;
    }

    private long granule(final long nanos)
    {
        return Math.floorDiv(nanos, granuleNanos);
    }

    /** Nanoseconds from {@code nowNanos} until a lease granted at {@code grantNanos} expires (0 if it has). */
    public long nanosUntilExpiry(final long grantNanos, final long nowNanos)
    {
        return Math.max(0, (granule(grantNanos) + GRANULES) * granuleNanos - nowNanos);
    }

    @Override
    public boolean leaseExpired(final long grantNanos, final long nowNanos)
    {
        return nanosUntilExpiry(grantNanos, nowNanos) == 0;
    }

    @Override
    public boolean leases()
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
        return maxConcurrent;
    }

    @Override
    public long fullState()
    {
        return 0;
    }

    @Override
    public long refill(final long counters, final long lastNanos, final long nowNanos)
    {
        // Each granule that began since the stored one pushes the oldest counter out.
        final long moved = granule(nowNanos) - granule(lastNanos);
        if (moved <= 0)
        {
            return counters;
        }
        return moved >= GRANULES ? 0 : counters << (BITS * moved);
    }

    private static long held(final long counters)
    {
        return (counters & MASK) + (counters >>> BITS & MASK) + (counters >>> 2 * BITS & MASK) + (counters >>> 3 * BITS);
    }

    @Override
    public long available(final long counters, final long nowNanos)
    {
        return maxConcurrent - held(counters);
    }

    @Override
    public long charge(final long counters, final long costUnits)
    {
        // Never beyond maxConcurrent in all (callers charge at most what is available): no carry.
        return counters + costUnits;
    }

    @Override
    public long release(final long counters, final long nowNanos, final long grantNanos, final long costUnits)
    {
        final long age = granule(nowNanos) - granule(grantNanos);
        if (age < 0 || age >= GRANULES || costUnits <= 0)
        {
            return counters; // expired (or not granted yet: no such lease)
        }
        final int shift = (int)(BITS * age);
        final long count = counters >>> shift & MASK;
        return counters - (Math.min(count, costUnits) << shift);
    }

    @Override
    public long nanosUntil(final long counters, final long targetUnits, final long nowNanos)
    {
        long free = maxConcurrent - held(counters);
        if (free >= targetUnits)
        {
            return 0;
        }
        // Without releases, the oldest granule's leases expire first.
        final long next = (granule(nowNanos) + 1) * granuleNanos - nowNanos;
        for (int age = GRANULES - 1; age >= 0; age--)
        {
            free += counters >>> (BITS * age) & MASK;
            if (free >= targetUnits)
            {
                return next + (long)(GRANULES - 1 - age) * granuleNanos;
            }
        }
        return next + (GRANULES - 1) * granuleNanos;
    }

    @Override
    public long nanosUntilFull(final long counters, final long nowNanos)
    {
        return counters == 0 ? 0 : nanosUntil(counters, maxConcurrent, nowNanos);
    }

    @Override
    public boolean isFull(final long counters, final long nowNanos)
    {
        return counters == 0;
    }

    @Override
    public ConcurrencyLimit share(final int index, final int shares)
    {
        checkShare(maxConcurrent, index, shares, "maxConcurrent");
        return new ConcurrencyLimit(TokenBucket.shareOf(maxConcurrent, index, shares), ttlNanos);
    }

    @Override
    public long windowSeconds()
    {
        return -Math.floorDiv(-ttlNanos, 1_000_000_000L);
    }

    /**
     * As a rate for the SDK's local budgets: {@code maxConcurrent} grants per TTL, burst
     * {@code maxConcurrent}. Local decisions see no releases, so callers that finish sooner than
     * the TTL get fewer grants locally than the cluster would give them.
     */
    @Override
    public TokenBucket.Rate asTokenBucket()
    {
        return TokenBucket.approximately(maxConcurrent, ttlNanos, maxConcurrent);
    }

    @Override
    public String algorithm()
    {
        return "CONCURRENCY";
    }

    @Override
    public String toString()
    {
        return "ConcurrencyLimit{maxConcurrent=" + maxConcurrent + ", ttlNanos=" + ttlNanos + '}';
    }
}
