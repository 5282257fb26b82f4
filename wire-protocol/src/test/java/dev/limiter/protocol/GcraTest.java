package dev.limiter.protocol;

import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** GCRA against the textbook algorithm in exact arithmetic, and against the token bucket it equals. */
class GcraTest
{
    private static final long SECOND = 1_000_000_000L;

    @Test
    void grantsAndRetryAfterMatchTheTextbookAlgorithmAndTheTokenBucket()
    {
        final SplittableRandom random = new SplittableRandom(13);
        for (int round = 0; round < 300; round++)
        {
            final long rate = 1 + random.nextInt(1000);
            final long period = 1 + random.nextLong(10 * SECOND);
            final long burst = 1 + random.nextInt(50);
            final TokenBucket.Rate bucket = TokenBucket.rate(rate, period, burst);
            final Gcra gcra = new Gcra(bucket);
            long time = random.nextLong(1L << 50);
            long gcraState = gcra.fullState();
            long bucketState = bucket.fullState();
            long last = time;
            // The textbook: times scaled by rate so the emission interval period/rate is a whole number.
            BigInteger tat = BigInteger.valueOf(time).multiply(BigInteger.valueOf(rate));
            final BigInteger tau = BigInteger.valueOf(burst).multiply(BigInteger.valueOf(period));
            for (int i = 0; i < 300; i++)
            {
                time += random.nextLong(Math.max(1, 2 * period / rate + 1));
                final long cost = 1 + random.nextInt((int)Math.min(burst, 4));
                final BigInteger now = BigInteger.valueOf(time).multiply(BigInteger.valueOf(rate));
                final BigInteger newTat = tat.max(now).add(BigInteger.valueOf(cost).multiply(BigInteger.valueOf(period)));
                final boolean expected = newTat.subtract(now).compareTo(tau) <= 0;

                gcraState = gcra.refill(gcraState, last, time);
                bucketState = bucket.refill(bucketState, last, time);
                last = time;
                final long units = gcra.costUnits(cost);
                final boolean allowed = gcra.available(gcraState, time) >= units;
                assertEquals(expected, allowed, "round " + round + " request " + i);
                assertEquals(bucket.available(bucketState, time) >= units, allowed, "the token bucket decides alike");
                if (allowed)
                {
                    tat = newTat;
                    gcraState = gcra.charge(gcraState, units);
                    bucketState = bucket.charge(bucketState, units);
                }
                else
                {
                    // The textbook's wait: until newTat - (now + wait) <= tau, in whole nanoseconds.
                    final BigInteger[] qr = newTat.subtract(tau).subtract(now).divideAndRemainder(BigInteger.valueOf(rate));
                    final long wait = qr[0].longValueExact() + (qr[1].signum() > 0 ? 1 : 0);
                    assertEquals(wait, gcra.nanosUntil(gcraState, units, time), "retry-after");
                    assertTrue(wait > 0);
                }
            }
        }
    }

    @Test
    void aKeyWhoseArrivalTimeHasPassedIsAsNeverSeen()
    {
        final Gcra gcra = new Gcra(TokenBucket.rate(10, SECOND, 5));
        final long ahead = gcra.charge(gcra.fullState(), gcra.costUnits(5));
        assertEquals(0, gcra.available(ahead, 0));
        assertEquals(SECOND / 10, gcra.nanosUntil(ahead, gcra.costUnits(1), 0));
        assertTrue(gcra.isFull(gcra.refill(ahead, 0, SECOND / 2), SECOND / 2));
        assertEquals("GCRA", gcra.algorithm());
        assertEquals(3, gcra.share(0, 2).burstTokens());
    }
}
