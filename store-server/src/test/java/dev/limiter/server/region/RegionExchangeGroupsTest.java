package dev.limiter.server.region;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.RegionalShares;
import dev.limiter.server.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A region of three Raft groups as one node's exchange sees it (the groups' logs faked): a group's
 * shards decide with no more than the group's copy of the shares, this node copies the shares into
 * the groups it leads, and the region reports what the oldest copy may still allow, so that another
 * region never raises into a share some group's leader may still decide with.
 */
@Timeout(30)
class RegionExchangeGroupsTest
{
    private static final int WHOLE = ShareAllocator.WHOLE;

    private final PolicyState state = new PolicyState(3, true);
    private final FakeRegionGroups groups = new FakeRegionGroups(3);
    private RegionExchange exchange;

    @AfterEach
    void close()
    {
        if (exchange != null)
        {
            exchange.close();
        }
    }

    private CompiledPolicy orders()
    {
        return RegionalOrders.orders(state);
    }

    private void bootstrap()
    {
        RegionalOrders.bootstrap(state);
    }

    /** This node leads no control group (so it proposes no shares of its own) and the groups {@code leading}. */
    private void startExchange(final int... leading)
    {
        for (final int g : leading)
        {
            groups.decides[g] = true;
        }
        exchange = new RegionExchange(RegionConfig.parse("eu", "us=127.0.0.1:1", "region-token-0123456789", 100, 20), state,
            new PolicyControl(state, null, 3), List.of(), () -> false, groups, true, null).start();
    }

    private void commit(final int orders)
    {
        RegionalOrders.commit(state, orders);
    }

    @Test
    void aGroupDecidesWithNoMoreThanItsCopyAndTheRegionReportsWhatTheOldestCopyMayAllow()
    {
        bootstrap();
        startExchange(1); // this node leads group 1; group 2's leader is another node
        assertEquals(WHOLE / 2, exchange.shares().reportedShare(orders()), "two regions start with half each");

        commit(950_000); // generation 1: a raise
        assertEquals(950_000, exchange.shares().decidingShare(orders(), 0));
        assertEquals(WHOLE / 2, exchange.shares().decidingShare(orders(), 1), "group 1 decides with its copy until the raise is in its log");
        assertTrue(groups.proposed.contains("1@1") && groups.proposed.stream().allMatch("1@1"::equals),
            "this node copies the shares into the group it leads, and only that one: " + groups.proposed);
        groups.apply(1, state.committedShares());
        groups.apply(2, state.committedShares()); // group 2's leader copied them too
        assertEquals(950_000, exchange.shares().decidingShare(orders(), 1));
        assertEquals(units(950_000), exchange.forShard(1).unitsPerToken(orders()), "what group 1's shards read follows its copy");

        commit(50_000); // generation 2: a lowering; group 2's leader is cut off and never hears of it
        assertEquals(50_000, exchange.shares().decidingShare(orders(), 0), "a lowering counts here at once");
        assertEquals(50_000, exchange.shares().decidingShare(orders(), 1), "and in a group's shards on this node");
        assertEquals(950_000, exchange.shares().reportedShare(orders()), "the groups' copies may still allow 0.95: no other region may take it");
        groups.apply(1, state.committedShares());
        assertEquals(950_000, exchange.shares().reportedShare(orders()), "group 2 still holds the copy of generation 1");
        groups.apply(2, state.committedShares());
        assertEquals(50_000, exchange.shares().reportedShare(orders()), "every group has the lowering in its log");
        assertEquals(units(50_000), exchange.forShard(2).unitsPerToken(orders()));
    }

    @Test
    void aGroupWhoseCopyIsNewerThanThisNodesSharesDecidesWithTheCopy()
    {
        bootstrap();
        commit(600_000); // generation 1, applied here
        groups.apply(1, state.committedShares());
        // Group 2's copy came from a node that applied generations this one has not (this node is cut off from the control group).
        groups.apply(2, RegionShares.newBuilder().setGeneration(2).putSharePpm("orders", 50_000).build());
        startExchange(2);
        assertEquals(50_000, exchange.shares().decidingShare(orders(), 2), "the lower of this node's shares and its group's copy");
        assertEquals(units(50_000), exchange.forShard(2).unitsPerToken(orders()));
        assertEquals(600_000, exchange.shares().decidingShare(orders(), 1));
        assertTrue(groups.proposed.isEmpty(), "a copy newer than this node's shares is not replaced by an older one: " + groups.proposed);
    }

    @Test
    void aCopyOlderThanEveryGenerationThisNodeKnowsMakesTheRegionReportTheWhole()
    {
        bootstrap();
        commit(300_000);
        commit(200_000); // generation 2: this node starts here, knowing nothing of generation 1
        startExchange();
        groups.apply(1, RegionShares.newBuilder().setGeneration(1).putSharePpm("orders", 300_000).build());
        groups.apply(2, state.committedShares());
        // This node's history starts at generation 2: what group 1's copy of generation 1 allows is not known here.
        assertEquals(WHOLE, exchange.shares().reportedShare(orders()), "what an older copy allows is not known here: the whole");
        groups.apply(1, state.committedShares());
        assertEquals(200_000, exchange.shares().reportedShare(orders()));
    }

    @Test
    void aCopyThatFailedIsProposedAgain() throws InterruptedException
    {
        bootstrap();
        groups.applyProposals = true;
        groups.failNext = true;
        startExchange(1);
        commit(700_000);
        Await.until("the next tick to copy again", Duration.ofSeconds(5), () -> groups.copies[1].getGeneration() >= 1,
            () -> groups.proposed.toString());
        assertEquals(1, groups.copies[1].getGeneration(), "the next tick copies again: " + groups.proposed);
        assertTrue(groups.proposed.size() >= 2, groups.proposed.toString());
    }

    private static long units(final int sharePpm)
    {
        return RegionalShares.unitsPerToken(sharePpm);
    }
}
