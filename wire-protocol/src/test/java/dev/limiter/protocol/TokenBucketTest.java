package dev.limiter.protocol;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TokenBucketTest
{
    private static final long SECOND = 1_000_000_000L;

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
}
