package dev.limiter.protocol;

/**
 * The generic cell rate algorithm: a key's state is its theoretical arrival time (TAT), the time
 * by which everything it was granted would have been paid for at the emission interval
 * {@code period / rate}; a request of cost c is allowed iff {@code TAT + c x interval - now <=
 * burst x interval}. The TAT is kept as its distance ahead of the key's stored time, in the exact
 * units of {@link TokenBucket} (1 ns is {@code unitsPerNano} units, one interval
 * {@code unitsPerToken}), so nothing is rounded and no absolute time is multiplied.
 *
 * <p>It decides exactly as the token bucket of the same rate and burst (the two are one algorithm
 * written two ways: tokens = burst - (TAT - now) / interval); teams that know GCRA from
 * redis-cell or throttled can name it. A key costs the same table slot as a bucket (32 bytes plus
 * its key): the TAT is one long, the time stored with it the other. Immutable.
 */
public final class Gcra extends Limit
{
    private final TokenBucket.Rate rate;

    /** @param rate the rate and burst; the emission interval is its period / rate */
    public Gcra(final TokenBucket.Rate rate)
    {
        this.rate = rate;
    }

    @Override
    public long unitsPerToken()
    {
        return rate.unitsPerToken();
    }

    @Override
    public long burstTokens()
    {
        return rate.burstTokens();
    }

    @Override
    public long burstUnits()
    {
        return rate.burstUnits();
    }

    /** A key never seen: its TAT is not ahead of now. */
    @Override
    public long fullState()
    {
        return 0;
    }

    /** How far the TAT is ahead of {@code nowNanos}: time that has passed pays it off (never below 0). */
    @Override
    public long refill(final long ahead, final long lastNanos, final long nowNanos)
    {
        final long elapsed = nowNanos - lastNanos;
        if (elapsed <= 0 || ahead == 0)
        {
            return ahead;
        }
        final long paid = elapsed * rate.unitsPerNano();
        if (Math.multiplyHigh(elapsed, rate.unitsPerNano()) != 0 || paid < 0 || paid >= ahead)
        {
            return 0;
        }
        return ahead - paid;
    }

    @Override
    public long available(final long ahead, final long nowNanos)
    {
        return rate.burstUnits() - ahead;
    }

    @Override
    public long charge(final long ahead, final long costUnits)
    {
        return ahead + costUnits;
    }

    @Override
    public long nanosUntil(final long ahead, final long targetUnits, final long nowNanos)
    {
        return rate.nanosUntil(rate.burstUnits() - ahead, targetUnits);
    }

    @Override
    public long nanosUntilFull(final long ahead, final long nowNanos)
    {
        return rate.nanosUntil(rate.burstUnits() - ahead, rate.burstUnits());
    }

    @Override
    public Gcra share(final int index, final int shares)
    {
        return new Gcra(rate.share(index, shares));
    }

    @Override
    public long windowSeconds()
    {
        return rate.windowSeconds();
    }

    @Override
    public TokenBucket.Rate asTokenBucket()
    {
        return rate;
    }

    @Override
    public String algorithm()
    {
        return "GCRA";
    }

    @Override
    public String toString()
    {
        return "Gcra{" + rate + '}';
    }
}
