package dev.limiter.client;

import dev.limiter.protocol.ReasonCode;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

class RateLimitHeadersTest
{
    private static Decision denied(final long retryAfterNanos, final long resetAfterNanos)
    {
        return new Decision(false, ReasonCode.RATE_LIMITED, 0, 100, retryAfterNanos, resetAfterNanos, "orders", 3, 60);
    }

    @Test
    void retryAfterShouldRoundUpToWholeSecondsSoClientsAreNeverEarly()
    {
        assertEquals(1, RateLimitHeaders.retryAfterSeconds(denied(1, 1)));
        assertEquals(1, RateLimitHeaders.retryAfterSeconds(denied(300_000_000L, 1)));
        assertEquals(1, RateLimitHeaders.retryAfterSeconds(denied(1_000_000_000L, 1)));
        assertEquals(2, RateLimitHeaders.retryAfterSeconds(denied(1_000_000_001L, 1)));
        assertEquals(1, RateLimitHeaders.retryAfterSeconds(denied(0, 0)), "a denial always says at least 1 s");
    }

    @Test
    void shouldRenderTheIetfFieldsAndRetryAfterOnADenial()
    {
        assertEquals(Map.of(
                "RateLimit-Policy", "\"orders\";q=100;w=60",
                "RateLimit", "\"orders\";r=0;t=2",
                "Retry-After", "1"),
            RateLimitHeaders.of(denied(600_000_000L, 1_500_000_000L)));
        assertEquals(429, RateLimitHeaders.status(denied(1, 1)));
    }

    @Test
    void shouldOmitRetryAfterWhenAllowedOrWhenRetryingCanNeverSucceed()
    {
        final Decision allowed = new Decision(true, ReasonCode.ALLOWED, 99, 100, 0, 10_000_000L, "orders", 3, 60);
        assertFalse(RateLimitHeaders.of(allowed).containsKey("Retry-After"));
        assertEquals("\"orders\";r=99;t=1", RateLimitHeaders.of(allowed).get("RateLimit"));
        assertEquals(200, RateLimitHeaders.status(allowed));
        final Decision never = new Decision(false, ReasonCode.COST_EXCEEDS_BURST, 100, 100, -1, 0, "orders", 3, 60);
        assertFalse(RateLimitHeaders.of(never).containsKey("Retry-After"));
        assertEquals(-1, RateLimitHeaders.retryAfterSeconds(never));
    }
}
