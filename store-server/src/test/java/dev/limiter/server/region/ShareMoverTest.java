package dev.limiter.server.region;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.RegionReport;
import dev.limiter.raft.NotLeaderException;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyLog;
import dev.limiter.server.control.PolicyState;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Region eu beside us, slots of 100 ms with guards of 20 ms: eu owns every even slot. Europe's
 * control state is the test's (a single node's: a proposal is applied at once), its clocks too.
 */
class ShareMoverTest
{
    /** In eu's slot, 50 ms after it began. */
    private static final long IN_EU_SLOT = 1_700_000_000_050L;
    private static final long SECOND = 1_000_000_000L;

    private final RegionConfig config = RegionConfig.parse("eu", "us=127.0.0.1:1", "region-token-0123456789", 100, 20);
    private final ShareAllocator allocator = new ShareAllocator("eu", config.regions(), 100, 20);
    private final PolicyState state = RegionalOrders.bootstrapped(1);
    private final NodeShares shares = new NodeShares(state, RegionGroups.SINGLE, allocator, true);
    private final HeardReports heard = new HeardReports(100, 2, allocator.initialShare(), () -> IN_EU_SLOT);
    private final AtomicLong asked = new AtomicLong();
    private final AtomicLong nanos = new AtomicLong();
    private final DemandMeter demand = new DemandMeter(ordinal -> asked.get(), nanos::get);
    private final AtomicBoolean leads = new AtomicBoolean(true);
    private final List<CompiledPolicy> regional = List.of(RegionalOrders.orders(state));

    private ShareMover mover(final PolicyControl control)
    {
        return new ShareMover(config, allocator, shares, heard, demand, control, leads::get);
    }

    private void usReports(final int ordersPpm, final double ordersDemand, final long atMillis)
    {
        heard.heard("127.0.0.1:1", "us", RegionReport.newBuilder().setRegion("us").setLeader(true)
            .setAt(Timestamps.fromMillis(atMillis)).putSharePpm("orders", ordersPpm)
            .putDemandPerSecond("orders", ordersDemand).build());
    }

    /** This node was asked {@code perSecond} decisions of orders a second, for a second. */
    private void europeAsks(final long perSecond)
    {
        demand.measure(regional);
        asked.addAndGet(perSecond);
        nanos.addAndGet(SECOND);
        demand.measure(regional);
    }

    @Test
    void theLeaderGivesUpShareToARegionThatAsksMoreThroughItsRegionsLog()
    {
        usReports(500_000, 100, IN_EU_SLOT - 1_000); // lowering needs no fresh report
        mover(new PolicyControl(state, null, 1)).move(regional, IN_EU_SLOT);

        assertEquals(Map.of("orders", 50_000), state.regionShares(), "down to the floor: Europe asks nothing");
        assertEquals(1, state.committedShares().getGeneration());
        assertEquals(50_000, shares.sharePpm(regional.get(0)));
    }

    @Test
    void theLeaderRaisesInItsOwnSlotUpToWhatTheOtherRegionsLeaderLeft()
    {
        europeAsks(100);
        usReports(200_000, 0, IN_EU_SLOT - 10);
        final ShareMover mover = mover(new PolicyControl(state, null, 1));
        mover.move(regional, IN_EU_SLOT + 100); // us's slot
        assertEquals(Map.of(), state.regionShares(), "not Europe's time to raise");

        mover.move(regional, IN_EU_SLOT);
        assertEquals(Map.of("orders", 800_000), state.regionShares(), "all that us does not claim");
    }

    @Test
    void aNodeThatDoesNotLeadProposesNothingAndDropsWhatItProposed()
    {
        usReports(500_000, 100, IN_EU_SLOT);
        shares.propose(Map.of("orders", 300_000));
        leads.set(false);
        mover(new PolicyControl(state, null, 1)).move(regional, IN_EU_SLOT);

        assertEquals(Map.of(), state.regionShares());
        assertFalse(shares.proposing("orders"));
    }

    @Test
    void aLoweringCountsWhileInFlightAndIsWithdrawnWhenTheLogRefusesIt()
    {
        final CompletableFuture<ByteBuffer> appended = new CompletableFuture<>();
        final ShareMover mover = mover(new PolicyControl(state, new PolicyLog()
        {
            @Override
            public boolean isLeader()
            {
                return true;
            }

            @Override
            public NotLeaderException notLeader()
            {
                throw new AssertionError("this node leads");
            }

            @Override
            public CompletableFuture<ByteBuffer> append(final PolicyCommand command)
            {
                assertEquals("region:eu", command.getActor());
                assertEquals(IN_EU_SLOT, Timestamps.toMillis(command.getAt()), "the command carries the mover's time");
                return appended;
            }
        }, 1));
        usReports(500_000, 100, IN_EU_SLOT);
        mover.move(regional, IN_EU_SLOT);
        assertEquals(50_000, shares.sharePpm(regional.get(0)), "decided with from its proposal");
        assertTrue(shares.proposing("orders"));
        mover.move(regional, IN_EU_SLOT);
        assertTrue(shares.proposing("orders"), "one proposal per policy at a time");

        appended.completeExceptionally(new IllegalStateException("lost leadership"));
        assertFalse(shares.proposing("orders"));
        assertEquals(500_000, shares.sharePpm(regional.get(0)), "the committed share stands");
    }
}
