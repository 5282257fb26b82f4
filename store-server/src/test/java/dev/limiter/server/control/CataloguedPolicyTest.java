package dev.limiter.server.control;

import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.protocol.policy.Regional;
import dev.limiter.protocol.policy.Selector;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CataloguedPolicyTest
{
    private static PolicyVersion version(final long number, final long burst, final boolean deleted)
    {
        return PolicyVersion.newBuilder().setDeleted(deleted).setPolicy(Policy.newBuilder().setId("orders")
            .setSelector(Selector.newBuilder().setRoute("/orders")).setRate(burst).setBurst(burst).setOwner("t")
            .setVersion(number).setRegional(Regional.getDefaultInstance())).build();
    }

    @Test
    void aTombstoneKeepsTheLimitsOfWhatItDeletedSoItsBucketsStillRefill()
    {
        final CataloguedPolicy orders = new CataloguedPolicy("orders", false);
        orders.add(version(1, 10, false));
        orders.add(version(2, 999, true));
        assertEquals(10, orders.rates.get(0)[0].burstTokens());
        assertSame(orders.rates.get(0), orders.rates.get(1));
        assertEquals(orders.split.get(0), orders.split.get(1));
    }

    @Test
    void aNodeInARegionCountsARegionalPolicysLimitInThousandthsOfAToken()
    {
        final CataloguedPolicy alone = new CataloguedPolicy("orders", false);
        final CataloguedPolicy inRegion = new CataloguedPolicy("orders", true);
        alone.add(version(1, 10, false));
        inRegion.add(version(1, 10, false));
        assertEquals(10, alone.rates.get(0)[0].burstTokens());
        assertEquals(10_000, inRegion.rates.get(0)[0].burstTokens());
    }

    @Test
    void aBlockedVersionStaysInItsPlaceMarkedAndTheOrdinalsAreHeldPerMode()
    {
        final CataloguedPolicy orders = new CataloguedPolicy("orders", false);
        orders.add(version(1, 10, false));
        orders.add(version(2, 20, false));
        orders.block(1);
        assertTrue(orders.versions.get(1).getBlocked());
        assertEquals(2, orders.versions.get(1).getPolicy().getVersion());

        assertArrayEquals(new int[0], orders.ordinals());
        orders.holdOrdinal(true, 7);
        orders.holdOrdinal(false, 3);
        assertEquals(7, orders.ordinal(true));
        assertArrayEquals(new int[] {3, 7}, orders.ordinals(), "enforced first");
    }
}
