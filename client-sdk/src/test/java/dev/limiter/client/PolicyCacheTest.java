package dev.limiter.client;

import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PolicyCacheTest
{
    private static final long SECOND = 1_000_000_000L;

    private final AtomicLong now = new AtomicLong(100 * SECOND);
    private final PolicyCache cache = new PolicyCache(Duration.ofSeconds(10), now::get);

    private static byte[] set(final long rate)
    {
        return PolicySet.newBuilder().addPolicies(Policy.newBuilder().setId("orders").setRate(rate)).build().toByteArray();
    }

    @Test
    void holdsTheNewestSetAndIgnoresAnOlderOneArrivingLate()
    {
        final List<Long> seen = new ArrayList<>();
        cache.onChange(snapshot -> seen.add(snapshot.version()));
        assertEquals(0, cache.version());
        assertTrue(cache.current().isEmpty());
        cache.received(5, set(10));
        cache.received(4, set(99)); // a node that has not applied version 5 yet
        assertEquals(5, cache.version());
        assertEquals(10, cache.current().orElseThrow().policies().getPolicies(0).getRate());
        cache.received(5, set(10));
        assertEquals(List.of(5L), seen, "a re-confirmation is not a change");
    }

    @Test
    void aSetNobodyConfirmedForLongerThanTheTtlIsStaleButItsVersionIsKept()
    {
        cache.received(7, set(10));
        now.addAndGet(9 * SECOND);
        assertTrue(cache.current().isPresent());
        cache.received(7, set(10)); // confirmed again
        now.addAndGet(9 * SECOND);
        assertTrue(cache.current().isPresent(), "the TTL counts from the last confirmation");
        now.addAndGet(2 * SECOND);
        assertFalse(cache.current().isPresent());
        assertEquals(7, cache.version());
    }

    @Test
    void aMalformedSetIsIgnored()
    {
        cache.received(3, set(10));
        cache.received(4, new byte[] {(byte)0xFF, 0x01});
        assertEquals(3, cache.version());
    }
}
