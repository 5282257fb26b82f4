package dev.limiter.client;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class RetrierTest
{
    private final List<Duration> waits = new ArrayList<>();

    private Retrier retrier(final double random)
    {
        return Retrier.builder().maxAttempts(4).backoff(Duration.ofMillis(100), Duration.ofMillis(350))
            .maxRetryAfter(Duration.ofSeconds(5)).sleeper(waits::add).random(() -> random).build();
    }

    @Test
    void honoursRetryAfterWithoutShorteningItAndAddsAtMostATenth() throws Exception
    {
        final int[] calls = {0};
        final String result = retrier(0.5).run(true, attempt ->
            ++calls[0] < 3 ? Retrier.Result.rateLimited("429", Duration.ofSeconds(2)) : Retrier.Result.done("200"));
        assertEquals("200", result);
        assertEquals(List.of(Duration.ofMillis(2100), Duration.ofMillis(2100)), waits);
    }

    @Test
    void doesNotBlindlyRetryA429WithoutRetryAfterNorOneAskingTooLong() throws Exception
    {
        final int[] calls = {0};
        assertEquals("429", retrier(0.5).run(true, attempt -> { calls[0]++; return Retrier.Result.rateLimited("429", null); }));
        assertEquals("429", retrier(0.5).run(true, attempt -> { calls[0]++; return Retrier.Result.rateLimited("429", Duration.ofSeconds(60)); }));
        assertEquals(2, calls[0], "one attempt each");
        assertEquals(List.of(), waits);
    }

    @Test
    void neverRetriesANonIdempotentOperation() throws Exception
    {
        final int[] calls = {0};
        assertEquals("503", retrier(0.5).run(false, attempt -> { calls[0]++; return Retrier.Result.retryable("503", "unavailable"); }));
        assertEquals("429", retrier(0.5).run(false, attempt -> { calls[0]++; return Retrier.Result.rateLimited("429", Duration.ofMillis(10)); }));
        assertEquals(2, calls[0]);
        assertEquals(List.of(), waits);
    }

    @Test
    void backsOffExponentiallyWithFullJitterUpToTheCapAndStopsAfterMaxAttempts() throws Exception
    {
        final int[] calls = {0};
        assertEquals("503", retrier(0.999).run(true, attempt -> { calls[0]++; return Retrier.Result.retryable("503", "unavailable"); }));
        assertEquals(4, calls[0]);
        // Caps 100, 200, 350 (400 capped) ms, times the random draw.
        assertEquals(List.of(Duration.ofNanos(99_900_000), Duration.ofNanos(199_800_000), Duration.ofNanos(349_650_000)), waits);
    }

    @Test
    void refusesNonsenseSettings()
    {
        assertThrows(IllegalArgumentException.class, () -> Retrier.builder().maxAttempts(0));
        assertThrows(IllegalArgumentException.class, () -> Retrier.builder().backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class, () -> Retrier.builder().maxRetryAfter(Duration.ofSeconds(-1)));
    }
}
