package dev.limiter.server.engine;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PolicyCountersTest
{
    @Test
    void eachPolicyAndKindCountsApartAndGrowingKeepsEveryCount()
    {
        final PolicyCounters counters = new PolicyCounters();
        counters.increment(3, PolicyCounters.ALLOWED);
        counters.increment(3, PolicyCounters.ALLOWED);
        counters.increment(3, PolicyCounters.DENIED);
        counters.increment(4, PolicyCounters.SHADOW_DENIED);
        counters.increment(1_000, PolicyCounters.RELEASE_EXPIRED); // past the first rows: grows
        counters.increment(40, PolicyCounters.OVERAGE);
        assertEquals(2, counters.get(3, PolicyCounters.ALLOWED));
        assertEquals(1, counters.get(3, PolicyCounters.DENIED));
        assertEquals(0, counters.get(3, PolicyCounters.SHADOW_DENIED));
        assertEquals(1, counters.get(4, PolicyCounters.SHADOW_DENIED));
        assertEquals(1, counters.get(1_000, PolicyCounters.RELEASE_EXPIRED));
        assertEquals(1, counters.get(40, PolicyCounters.OVERAGE));
        assertEquals(0, counters.get(1_000, PolicyCounters.RELEASED));
    }

    @Test
    void aPolicyNeverCountedReadsZeroWhateverItsOrdinal()
    {
        final PolicyCounters counters = new PolicyCounters();
        assertEquals(0, counters.get(0, PolicyCounters.ALLOWED));
        assertEquals(0, counters.get(65_535, PolicyCounters.SHARE_TOKENS));
        assertEquals(0, counters.get(-1, PolicyCounters.ALLOWED));
    }

    @Test
    void aSetValueReplacesTheLast()
    {
        final PolicyCounters counters = new PolicyCounters();
        counters.set(7, PolicyCounters.SHARE_TOKENS, 11);
        counters.set(7, PolicyCounters.SHARE_TOKENS, 5);
        assertEquals(5, counters.get(7, PolicyCounters.SHARE_TOKENS));
        assertEquals(0, counters.get(7, PolicyCounters.ALLOWED));
    }
}
