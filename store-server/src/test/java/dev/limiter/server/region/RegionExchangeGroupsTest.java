package dev.limiter.server.region;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Regional;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.RegionalShares;
import dev.limiter.server.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

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
    private static final long T0 = 1_700_000_000_000L;
    private static final int WHOLE = ShareAllocator.WHOLE;

    private final PolicyState state = new PolicyState(3, true);
    private final FakeGroups groups = new FakeGroups(3);
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
        return state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow();
    }

    private void bootstrap()
    {
        state.apply(PolicyState.command("n1", T0).setBootstrap(PolicySet.newBuilder().setVersion(1)
            .addPolicies(Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/orders")).setRate(100).setBurst(100)
                .setOwner("t").setRegional(Regional.getDefaultInstance()))
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(10).setOwner("t"))).build());
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
        state.apply(PolicyState.command("region:eu", T0).setRegionShares(RegionShares.newBuilder().putSharePpm("orders", orders)).build());
    }

    @Test
    void aGroupDecidesWithNoMoreThanItsCopyAndTheRegionReportsWhatTheOldestCopyMayAllow()
    {
        bootstrap();
        startExchange(1); // this node leads group 1; group 2's leader is another node
        assertEquals(WHOLE / 2, exchange.reportedShare(orders()), "two regions start with half each");

        commit(950_000); // generation 1: a raise
        assertEquals(950_000, exchange.decidingShare(orders(), 0));
        assertEquals(WHOLE / 2, exchange.decidingShare(orders(), 1), "group 1 decides with its copy until the raise is in its log");
        assertTrue(groups.proposed.contains("1@1") && groups.proposed.stream().allMatch("1@1"::equals),
            "this node copies the shares into the group it leads, and only that one: " + groups.proposed);
        groups.apply(1, state.committedShares());
        groups.apply(2, state.committedShares()); // group 2's leader copied them too
        assertEquals(950_000, exchange.decidingShare(orders(), 1));
        assertEquals(units(950_000), exchange.forShard(1).unitsPerToken(orders()), "what group 1's shards read follows its copy");

        commit(50_000); // generation 2: a lowering; group 2's leader is cut off and never hears of it
        assertEquals(50_000, exchange.decidingShare(orders(), 0), "a lowering counts here at once");
        assertEquals(50_000, exchange.decidingShare(orders(), 1), "and in a group's shards on this node");
        assertEquals(950_000, exchange.reportedShare(orders()), "the groups' copies may still allow 0.95: no other region may take it");
        groups.apply(1, state.committedShares());
        assertEquals(950_000, exchange.reportedShare(orders()), "group 2 still holds the copy of generation 1");
        groups.apply(2, state.committedShares());
        assertEquals(50_000, exchange.reportedShare(orders()), "every group has the lowering in its log");
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
        assertEquals(50_000, exchange.decidingShare(orders(), 2), "the lower of this node's shares and its group's copy");
        assertEquals(units(50_000), exchange.forShard(2).unitsPerToken(orders()));
        assertEquals(600_000, exchange.decidingShare(orders(), 1));
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
        assertEquals(WHOLE, exchange.reportedShare(orders()), "what an older copy allows is not known here: the whole");
        groups.apply(1, state.committedShares());
        assertEquals(200_000, exchange.reportedShare(orders()));
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

    /** Groups whose logs are this test: a proposal is recorded (and applied at once unless told to fail). */
    private static final class FakeGroups implements RegionGroups
    {
        final RegionShares[] copies;
        final boolean[] decides;
        final List<String> proposed = new CopyOnWriteArrayList<>();
        final List<Runnable> listeners = new ArrayList<>();
        volatile boolean failNext;
        /** Whether proposals apply at once (the first test applies them itself, to look between). */
        volatile boolean applyProposals;

        FakeGroups(final int count)
        {
            copies = new RegionShares[count];
            decides = new boolean[count];
            for (int g = 0; g < count; g++)
            {
                copies[g] = RegionShares.getDefaultInstance();
            }
        }

        synchronized void apply(final int group, final RegionShares copy)
        {
            if (copy.getGeneration() > copies[group].getGeneration())
            {
                copies[group] = copy;
                listeners.forEach(Runnable::run);
            }
        }

        @Override
        public int count()
        {
            return copies.length;
        }

        @Override
        public int groupOf(final int shard)
        {
            return shard % copies.length;
        }

        @Override
        public synchronized RegionShares copy(final int group)
        {
            return copies[group];
        }

        @Override
        public boolean decides(final int group)
        {
            return decides[group];
        }

        @Override
        public CompletableFuture<?> propose(final int group, final RegionShares shares)
        {
            proposed.add(group + "@" + shares.getGeneration());
            if (failNext)
            {
                failNext = false;
                return CompletableFuture.failedFuture(new IllegalStateException("not committed"));
            }
            if (applyProposals)
            {
                apply(group, shares);
            }
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void onCopy(final Runnable listener)
        {
            listeners.add(listener);
        }
    }
}
