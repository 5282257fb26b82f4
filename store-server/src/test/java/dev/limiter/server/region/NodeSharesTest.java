package dev.limiter.server.region;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.RegionalShares;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One Raft group, two regions (eu and us): each starts with half of {@code orders}. */
class NodeSharesTest
{
    private final PolicyState state = RegionalOrders.bootstrapped(1);
    private final ShareAllocator allocator = new ShareAllocator("eu", List.of("eu", "us"), 100, 20);
    private final NodeShares shares = new NodeShares(state, RegionGroups.SINGLE, allocator, true);

    private CompiledPolicy orders()
    {
        return RegionalOrders.orders(state);
    }

    @Test
    void aLowerShareProposedIsDecidedWithAtOnceAndReportedOnlyOnceCommitted()
    {
        shares.propose(Map.of("orders", 200_000));
        assertEquals(200_000, shares.sharePpm(orders()));
        assertEquals(RegionalShares.unitsPerToken(200_000), shares.forShard(0).unitsPerToken(orders()),
            "the shards read it at once");
        assertEquals(500_000, shares.reportedShare(orders()),
            "the other regions may not take it before it is committed");

        RegionalOrders.commit(state, 200_000);
        shares.settle();
        assertFalse(shares.proposing("orders"));
        assertEquals(200_000, shares.reportedShare(orders()));
    }

    @Test
    void aHigherShareProposedIsReportedAtOnceAndDecidedWithOnlyOnceCommitted()
    {
        shares.propose(Map.of("orders", 800_000));
        assertEquals(800_000, shares.reportedShare(orders()));
        assertEquals(500_000, shares.sharePpm(orders()));

        RegionalOrders.commit(state, 800_000);
        assertEquals(800_000, shares.sharePpm(orders()));
    }

    @Test
    void aProposalStaysUntilTheLogHoldsItsShare()
    {
        shares.propose(Map.of("orders", 300_000));
        RegionalOrders.commit(state, 250_000); // another leader's, say
        shares.settle();
        assertTrue(shares.proposing("orders"));
        assertEquals(250_000, shares.sharePpm(orders()));
    }

    @Test
    void aWithdrawnProposalLeavesTheCommittedShareButANewerProposalStays()
    {
        shares.propose(Map.of("orders", 200_000));
        shares.withdraw(Map.of("orders", 200_000));
        assertFalse(shares.proposing("orders"));
        assertEquals(500_000, shares.sharePpm(orders()));
        assertEquals(RegionalShares.unitsPerToken(500_000), shares.forShard(0).unitsPerToken(orders()));

        shares.propose(Map.of("orders", 300_000));
        shares.withdraw(Map.of("orders", 200_000)); // an older proposal's refusal
        assertTrue(shares.proposing("orders"));
        assertEquals(300_000, shares.sharePpm(orders()));

        shares.dropProposals();
        assertFalse(shares.proposing("orders"));
    }

    @Test
    void aPolicyNoCommandNamedHasTheEqualSplitWhenTheLogKeepsSharesAndItsFloorWhenNothingDoes()
    {
        assertEquals(500_000, shares.committed(orders()));
        final NodeShares forgetful = new NodeShares(state, RegionGroups.SINGLE, allocator, false);
        assertEquals(50_000, forgetful.committed(orders()), "a lone node may not hold half any more after a restart");
        assertEquals(50_000, forgetful.reportedShare(orders()));
    }

    @Test
    void theShareOfAPolicyIsZeroWhenNoRegionalPolicyOfThatIdIsInForce()
    {
        assertEquals(500_000, shares.shareOf("orders"));
        assertEquals(0, shares.shareOf("baseline"));
    }
}
