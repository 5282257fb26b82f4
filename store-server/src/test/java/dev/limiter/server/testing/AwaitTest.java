package dev.limiter.server.testing;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AwaitTest
{
    @Test
    void shouldReturnAtOnceWhenTheConditionAlreadyHolds()
    {
        final AtomicInteger checks = new AtomicInteger();
        Await.until("something true", Duration.ZERO, () -> checks.incrementAndGet() > 0);
        assertEquals(1, checks.get());
    }

    @Test
    void shouldPollUntilTheConditionHolds()
    {
        final AtomicInteger checks = new AtomicInteger();
        Await.until("the fifth check", Duration.ofSeconds(10), () -> checks.incrementAndGet() == 5);
        assertEquals(5, checks.get());
    }

    @Test
    void shouldFailNamingWhatWasAwaitedAndTheStateWhenTheTimeoutPasses()
    {
        final AssertionError failure = assertThrows(AssertionError.class,
            () -> Await.until("a leader", Duration.ofMillis(30), () -> false, () -> "n1 FOLLOWER, n2 CANDIDATE"));
        assertTrue(failure.getMessage().contains("waiting for a leader"), failure.getMessage());
        assertTrue(failure.getMessage().endsWith("state: n1 FOLLOWER, n2 CANDIDATE"), failure.getMessage());
    }

    @Test
    void shouldDescribeLazily()
    {
        final AtomicInteger described = new AtomicInteger();
        Await.until(() -> "described " + described.incrementAndGet(), Duration.ofSeconds(1), () -> true);
        assertEquals(0, described.get(), "the description is built only for a failure");
    }
}
