package dev.limiter.client;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BackoffTest
{
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    private final Backoff lowest = new Backoff(bound -> 0);
    private final Backoff highest = new Backoff(bound -> bound - 1);

    @Test
    void eachTryWaitsBetweenHalfAndAllOfADoublingCeilingCappedByItsReason()
    {
        assertEquals(MS / 2, lowest.delayNanos(Backoff.Reason.OVERLOADED, 0));
        assertEquals(MS, highest.delayNanos(Backoff.Reason.OVERLOADED, 0));
        assertEquals(4 * MS, highest.delayNanos(Backoff.Reason.OVERLOADED, 2));
        assertEquals(32 * MS, highest.delayNanos(Backoff.Reason.OVERLOADED, 5));
        assertEquals(32 * MS, highest.delayNanos(Backoff.Reason.OVERLOADED, 40), "capped, however many tries");
        assertEquals(16 * MS, lowest.delayNanos(Backoff.Reason.OVERLOADED, Integer.MAX_VALUE));
        assertEquals(25 * MS, highest.delayNanos(Backoff.Reason.NO_LEADER, 3));
        assertEquals(25 * MS, lowest.delayNanos(Backoff.Reason.RECONNECT, 0));
        assertEquals(2_000 * MS, highest.delayNanos(Backoff.Reason.RECONNECT, 10));
    }

    @Test
    void theDefaultPolicyStaysWithinItsBoundsAndVaries()
    {
        long min = Long.MAX_VALUE;
        long max = 0;
        for (int i = 0; i < 1_000; i++)
        {
            final long delay = Backoff.DEFAULT.delayNanos(Backoff.Reason.NO_LEADER, 0);
            assertTrue(delay >= 5 * MS && delay <= 10 * MS, "first NO_LEADER wait " + delay);
            min = Math.min(min, delay);
            max = Math.max(max, delay);
        }
        assertTrue(max - min > MS, "jittered: " + min + " to " + max);
    }

    @Test
    void aTryThatWouldComeAfterTheDeadlineDoesNotFit()
    {
        assertTrue(Backoff.fitsBefore(100, 50, 49));
        assertFalse(Backoff.fitsBefore(100, 50, 50));
        assertTrue(Backoff.fitsBefore(Long.MIN_VALUE + 10, Long.MAX_VALUE - 10, 5),
            "nanoTime wraps: compared as differences");
    }
}
