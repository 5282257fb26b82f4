package dev.limiter.protocol;

import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TokenBucketTest
{
    private static final long SECOND = 1_000_000_000L;

    @Test
    void aWaitWhoseDebtAndBurstTogetherWouldPassExactArithmeticIsRefused()
    {
        // One token per nanosecond: an hour's wait is 3.6e12 units of debt, on top of the burst.
        final TokenBucket.Rate huge = TokenBucket.rate(1, 1, TokenBucket.MAX_UNITS - 1_000_000_000_000L);
        final IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
            () -> ExcessLimit.waiting(huge, 3_600_000_000_000L));
        org.junit.jupiter.api.Assertions.assertTrue(refused.getMessage().contains("shorten maxWait"), refused.getMessage());
        org.junit.jupiter.api.Assertions.assertEquals(999_999_999_999L,
            ExcessLimit.waiting(huge, 999_999_999_999L).maxWaitNanos(), "a debt that fits beside the burst is taken");
    }

    @Test
    void shouldReduceRateToLowestTermsSoArithmeticIsExact()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(1000, SECOND, 10);
        assertEquals(1_000_000, rate.unitsPerToken());
        assertEquals(1, rate.unitsPerNano());
        assertEquals(10_000_000, rate.burstUnits());
    }

    @Test
    void shouldRefillAtRateAndCapAtBurst()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(10, SECOND, 5);
        final long empty = 0;
        assertEquals(1, rate.wholeTokens(rate.refill(empty, 0, SECOND / 10)));
        assertEquals(3, rate.wholeTokens(rate.refill(empty, 0, 3 * SECOND / 10)));
        assertEquals(5, rate.wholeTokens(rate.refill(empty, 0, 10 * SECOND)), "capped at burst");
        assertEquals(rate.burstUnits(), rate.refill(empty, 0, 10 * SECOND));
    }

    @Test
    void shouldClampNegativeElapsedToZero()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(10, SECOND, 5);
        final long units = rate.costUnits(2);
        assertEquals(units, rate.refill(units, 5 * SECOND, 4 * SECOND), "time going backwards adds nothing");
        assertEquals(units, rate.refill(units, 5 * SECOND, 5 * SECOND));
    }

    @Test
    void shouldAccumulateFractionalTokensExactly()
    {
        // 3 tokens per 10 s: one token every 3.333... s.
        final TokenBucket.Rate rate = TokenBucket.rate(3, 10 * SECOND, 3);
        final long oneTokenAt = rate.nanosUntil(0, rate.costUnits(1));
        assertEquals(3_333_333_334L, oneTokenAt, "ceil(10 s / 3)");
        assertEquals(0, rate.wholeTokens(rate.refill(0, 0, oneTokenAt - 1)));
        assertEquals(1, rate.wholeTokens(rate.refill(0, 0, oneTokenAt)));
        // Partial refills add up with no rounding loss: 10 steps of 1 s give exactly 3 tokens.
        long units = 0;
        for (int i = 0; i < 10; i++)
        {
            units = rate.refill(units, i * SECOND, (i + 1) * SECOND);
        }
        assertEquals(rate.costUnits(3), units);
    }

    @Test
    void shouldNotOverflowAfterAVeryLongIdle()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(1_000_000_000L, SECOND, 1_000_000_000L);
        assertEquals(rate.burstUnits(), rate.refill(0, Long.MIN_VALUE / 2, Long.MAX_VALUE / 2));
        final TokenBucket.Rate slow = TokenBucket.rate(1, 366L * 24 * 3600 * SECOND, 10);
        assertEquals(slow.burstUnits(), slow.refill(0, 0, Long.MAX_VALUE));
    }

    @Test
    void retryAfterShouldBeTheExactTimeUntilCostTokensExist()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(7, 3 * SECOND, 10);
        final long units = rate.costUnits(2) + 5; // a fraction above 2 tokens
        final long cost = rate.costUnits(5);
        final long wait = rate.nanosUntil(units, cost);
        assertTrue(rate.refill(units, 0, wait - 1) < cost, "one nanosecond early is not enough");
        assertTrue(rate.refill(units, 0, wait) >= cost, "at retry-after the tokens exist");
        assertEquals(0, rate.nanosUntil(cost, cost));
    }

    @Test
    void resetAfterShouldBeTheExactTimeUntilFull()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(4, SECOND, 8);
        final long full = rate.nanosUntilFull(rate.costUnits(6));
        assertEquals(SECOND / 2, full);
        assertEquals(rate.burstUnits(), rate.refill(rate.costUnits(6), 0, full));
    }

    @Test
    void shouldRejectRatesThatCannotBeExact()
    {
        assertThrows(IllegalArgumentException.class, () -> TokenBucket.rate(0, SECOND, 1));
        assertThrows(IllegalArgumentException.class, () -> TokenBucket.rate(1, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> TokenBucket.rate(1, SECOND, 0));
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> TokenBucket.rate(7, 86_400 * SECOND, 1_000_000_000L));
        assertTrue(e.getMessage().contains("lower the burst"), e.getMessage());
    }
    @Test
    void sharesOfARateGrantTogetherNoMoreThanTheWholeRateOverAnyInterval()
    {
        final SplittableRandom random = new SplittableRandom(20261204);
        for (int round = 0; round < 200; round++)
        {
            final long tokens = 1 + random.nextLong(5_000);
            final long period = 1 + random.nextLong(10 * SECOND);
            final int shares = 1 + random.nextInt(64);
            final long burst = shares + random.nextLong(10_000);
            final TokenBucket.Rate whole = TokenBucket.rate(tokens, period, burst);
            final TokenBucket.Rate[] parts = new TokenBucket.Rate[shares];
            long bursts = 0;
            for (int s = 0; s < shares; s++)
            {
                parts[s] = whole.share(s, shares);
                bursts += parts[s].burstTokens();
            }
            assertEquals(burst, bursts, "the shares' bursts add up to the whole burst");
            // Every share is drained greedily at random moments: what all of them granted by time t
            // never exceeds burst + tokens x t / period (the whole bucket's own bound).
            final long[] units = new long[shares];
            final long[] last = new long[shares];
            for (int s = 0; s < shares; s++)
            {
                units[s] = parts[s].burstUnits();
            }
            long granted = 0;
            long now = 0;
            for (int step = 0; step < 400; step++)
            {
                now += random.nextLong(1 + 3 * period / Math.max(1, tokens));
                final int s = random.nextInt(shares);
                units[s] = parts[s].refill(units[s], last[s], now);
                last[s] = now;
                final long take = parts[s].wholeTokens(units[s]);
                units[s] -= parts[s].costUnits(take);
                granted += take;
                final BigInteger bound = BigInteger.valueOf(tokens).multiply(BigInteger.valueOf(now))
                    .divide(BigInteger.valueOf(period)).add(BigInteger.valueOf(burst));
                assertTrue(BigInteger.valueOf(granted).compareTo(bound) <= 0,
                    "round " + round + ": " + granted + " granted by " + now + " ns, bound " + bound + " (" + whole + ")");
            }
        }
    }

    @Test
    void aShareRefillsAtExactlyItsPartOfTheRate()
    {
        final TokenBucket.Rate whole = TokenBucket.rate(1000, SECOND, 10);
        final TokenBucket.Rate quarter = whole.share(3, 4);
        assertEquals(2, quarter.burstTokens(), "10 tokens in 4 shares: 3, 3, 2, 2");
        assertEquals(3, whole.share(0, 4).burstTokens());
        assertEquals(4_000_000, quarter.nanosUntil(0, quarter.costUnits(1)), "a token every 4 ms: a quarter of 1000/s");
        assertEquals(1_000_000, whole.nanosUntil(0, whole.costUnits(1)));
        final IllegalArgumentException tooSmall = assertThrows(IllegalArgumentException.class, () -> whole.share(0, 11));
        assertTrue(tooSmall.getMessage().contains("raise the burst to at least 11"), tooSmall.getMessage());
        assertThrows(IllegalArgumentException.class, () -> whole.share(4, 4));
    }

    @Test
    void anApproximateRateIsExactWhenItCanBeAndNeverMoreThanAskedWhenNot()
    {
        assertEquals(TokenBucket.rate(7, SECOND, 3).toString(), TokenBucket.approximately(7, SECOND, 3).toString());
        final SplittableRandom random = new SplittableRandom(9);
        for (int i = 0; i < 10_000; i++)
        {
            final long tokens = 1 + random.nextLong(1L << (1 + random.nextInt(50)));
            final long period = 1 + random.nextLong(366L * 86_400 * SECOND);
            final long burst = 1 + random.nextLong(1L << (1 + random.nextInt(50)));
            final TokenBucket.Rate rate = TokenBucket.approximately(tokens, period, burst);
            assertTrue(rate.burstTokens() <= burst, rate + " for a burst of " + burst);
            // Never faster than asked: a whole period's refill stays within the tokens asked for (and a rounding token).
            final long perPeriod = rate.wholeTokens(rate.refill(0, 0, Math.min(period, rate.nanosUntilFull(0))));
            assertTrue(perPeriod <= tokens + 1, rate + " refills " + perPeriod + " of " + tokens + " per " + period + " ns");
        }
    }
}
