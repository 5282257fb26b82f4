package dev.limiter.protocol;

/**
 * Token-bucket arithmetic as pure functions on primitives, shared by the server's table and the
 * SDK's fallback buckets so that both agree to the last token.
 *
 * <p>Exact integer arithmetic: {@code rate} tokens per {@code period} is reduced to lowest terms
 * {@code r'/p'}; one token is worth {@code p'} units and every nanosecond adds {@code r'} units.
 * Refill, retry-after and reset-after are then exact, with no floating point and no drift, and
 * every replica computes the same bits. The price is a range limit: {@code burst * p'} must stay
 * below 2^62, checked when a rate is built.
 *
 * <p>Semantics (the seed's atomic pseudocode): elapsed time is clamped at zero, refill is capped
 * at the burst, a request is allowed iff the bucket holds at least {@code cost} tokens, and a cost
 * above the burst can never be allowed.
 */
public final class TokenBucket
{
    /** Largest value of {@code burst * unitsPerToken}: leaves headroom so sums cannot overflow. */
    public static final long MAX_UNITS = 1L << 62;

    private TokenBucket()
    {
    }

    /** A compiled rate and capacity: a key's state is its content in units. Immutable. */
    public static final class Rate extends Limit
    {
        private final long unitsPerToken;
        private final long unitsPerNano;
        private final long burstTokens;
        private final long burstUnits;

        private Rate(final long unitsPerToken, final long unitsPerNano, final long burstTokens)
        {
            this.unitsPerToken = unitsPerToken;
            this.unitsPerNano = unitsPerNano;
            this.burstTokens = burstTokens;
            this.burstUnits = burstTokens * unitsPerToken;
        }

        @Override
        public long unitsPerToken()
        {
            return unitsPerToken;
        }

        /** Units added per nanosecond of elapsed time. */
        public long unitsPerNano()
        {
            return unitsPerNano;
        }

        @Override
        public long burstTokens()
        {
            return burstTokens;
        }

        @Override
        public long burstUnits()
        {
            return burstUnits;
        }

        @Override
        public long costUnits(final long costTokens)
        {
            return costTokens * unitsPerToken;
        }

        @Override
        public long wholeTokens(final long units)
        {
            return units / unitsPerToken;
        }

        @Override
        public long fullState()
        {
            return burstUnits;
        }

        @Override
        public long available(final long units, final long nowNanos)
        {
            return units;
        }

        @Override
        public long charge(final long units, final long costUnits)
        {
            return units - costUnits;
        }

        @Override
        public long nanosUntil(final long units, final long targetUnits, final long nowNanos)
        {
            return nanosUntil(units, targetUnits);
        }

        @Override
        public long nanosUntilFull(final long units, final long nowNanos)
        {
            return nanosUntil(units, burstUnits);
        }

        @Override
        public long windowSeconds()
        {
            return -Math.floorDiv(-nanosUntilFull(0), 1_000_000_000L);
        }

        @Override
        public Rate asTokenBucket()
        {
            return this;
        }

        @Override
        public String algorithm()
        {
            return "TOKEN_BUCKET";
        }

        /**
         * Bucket content after refilling from {@code lastNanos} to {@code nowNanos}: elapsed time is
         * clamped at zero and the result capped at the burst. Never overflows.
         */
        @Override
        public long refill(final long units, final long lastNanos, final long nowNanos)
        {
            final long elapsed = nowNanos - lastNanos;
            if (elapsed <= 0)
            {
                return units;
            }
            final long missing = burstUnits - units;
            if (missing <= 0)
            {
                return burstUnits;
            }
            // Past the time to fill the answer is the burst; the 128-bit product rules out overflow
            // without a division on the hot path.
            final long added = elapsed * unitsPerNano;
            if (Math.multiplyHigh(elapsed, unitsPerNano) != 0 || added < 0 || added >= missing)
            {
                return burstUnits;
            }
            return units + added;
        }

        /** Exact nanoseconds until a bucket holding {@code units} holds {@code targetUnits}; 0 if it already does. */
        public long nanosUntil(final long units, final long targetUnits)
        {
            final long deficit = targetUnits - units;
            if (deficit <= 0)
            {
                return 0;
            }
            return unitsPerNano == 1 ? deficit : ceilDiv(deficit, unitsPerNano); // 1 is the common case
        }

        /** Exact nanoseconds until a bucket holding {@code units} is full. */
        public long nanosUntilFull(final long units)
        {
            return nanosUntil(units, burstUnits);
        }

        /**
         * Share {@code index} of {@code shares} equal parts of this rate and capacity: each share
         * refills at exactly 1/{@code shares} of the rate (the period is multiplied, so the shares'
         * rates add up to this one with no rounding) and holds {@link #shareOf shareOf(burst)}
         * tokens (the bursts add up to this one too). Tokens granted by all the shares over any
         * interval of T ns therefore never exceed what this rate grants: burst + rate x T.
         *
         * @throws IllegalArgumentException when a share would hold less than one token (the burst is
         *                                  below {@code shares}) or is beyond exact arithmetic
         */
        @Override
        public Rate share(final int index, final int shares)
        {
            checkShare(burstTokens, index, shares, "burst");
            final long periodUnits;
            try
            {
                periodUnits = Math.multiplyExact(unitsPerToken, (long)shares);
            }
            catch (final ArithmeticException e)
            {
                throw new IllegalArgumentException("a rate of " + unitsPerNano + " per " + unitsPerToken + " ns split into " + shares +
                    " shares is beyond exact arithmetic: use a rate that divides its period more evenly", e);
            }
            return rate(unitsPerNano, periodUnits, shareOf(burstTokens, index, shares));
        }

        @Override
        public String toString()
        {
            return "Rate{unitsPerToken=" + unitsPerToken + ", unitsPerNano=" + unitsPerNano + ", burst=" + burstTokens + '}';
        }
    }

    /**
     * Builds a rate of {@code tokens} per {@code periodNanos} with capacity {@code burst}.
     *
     * @throws IllegalArgumentException naming what is out of range and what to change
     */
    public static Rate rate(final long tokens, final long periodNanos, final long burst)
    {
        if (tokens <= 0)
        {
            throw new IllegalArgumentException("rate must be at least 1 token per period, was " + tokens);
        }
        if (periodNanos <= 0)
        {
            throw new IllegalArgumentException("period must be positive, was " + periodNanos + " ns");
        }
        if (burst <= 0)
        {
            throw new IllegalArgumentException("burst must be at least 1 token, was " + burst);
        }
        final long gcd = gcd(tokens, periodNanos);
        final long unitsPerToken = periodNanos / gcd;
        final long unitsPerNano = tokens / gcd;
        if (burst > MAX_UNITS / unitsPerToken)
        {
            throw new IllegalArgumentException("burst " + burst + " with a rate of " + tokens + " per " + periodNanos +
                " ns is beyond exact arithmetic (burst x reduced period must stay below 2^62): " +
                "lower the burst, shorten the period, or use a rate that divides the period more evenly");
        }
        return new Rate(unitsPerToken, unitsPerNano, burst);
    }

    /**
     * {@link #rate}, or, when that is beyond exact arithmetic, the nearest rate that is not: the
     * tokens and burst rounded down to a multiple of 10, 100, ... (they then share more factors with
     * the period), and failing that one token every ceil(period / tokens) ns. Never more than asked; for budgets
     * that need only be close (the SDK's local budgets for window policies), never for a policy's
     * own bucket.
     */
    public static Rate approximately(final long tokens, final long periodNanos, final long burst)
    {
        for (long scale = 1; scale <= 1_000_000_000L; scale *= 10)
        {
            try
            {
                return rate(Math.max(1, tokens / scale * scale), periodNanos, Math.max(1, burst / scale * scale));
            }
            catch (final IllegalArgumentException beyondExactArithmetic)
            {
                // coarser
            }
        }
        // One token every ceil(period / tokens) ns: never faster than asked, and always exact.
        final long nanosPerToken = Math.max(1, -Math.floorDiv(-periodNanos, tokens));
        return rate(1, nanosPerToken, Math.max(1, Math.min(burst, MAX_UNITS / nanosPerToken - 1)));
    }

    /**
     * Part {@code index} of {@code total} split into {@code shares} parts that differ by at most one
     * and add up to {@code total} exactly (the remainder goes to the lowest indexes).
     */
    public static long shareOf(final long total, final int index, final int shares)
    {
        return total / shares + (index < total % shares ? 1 : 0);
    }

    static long ceilDiv(final long a, final long b)
    {
        return -Math.floorDiv(-a, b);
    }

    static long gcd(final long a, final long b)
    {
        long x = a;
        long y = b;
        while (y != 0)
        {
            final long t = x % y;
            x = y;
            y = t;
        }
        return x;
    }
}
