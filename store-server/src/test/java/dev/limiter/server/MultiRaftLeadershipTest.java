package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.MultiRaftCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static dev.limiter.server.testing.MultiRaftCluster.NO_REFILL;
import static dev.limiter.server.testing.MultiRaftCluster.NO_REFILL_STRICT;
import static dev.limiter.server.testing.MultiRaftCluster.tenantOn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Leadership of one group moving in a cluster of three groups (a {@link MultiRaftCluster}): on a leader's death, on a
 * planned hand-over and on a planned stop, under load, without dropping an answered decision.
 */
@Timeout(180)
class MultiRaftLeadershipTest
{
    /** A new cluster for each test, in a directory of its own; stopped after the test. */
    @RegisterExtension
    final MultiRaftCluster cluster = new MultiRaftCluster();

    @Test
    void aGroupLeadersDeathMovesOnlyItsGroupAndLeadershipReturnsWhenItIsBack() throws Exception
    {
        // n2 writes the classic log layout, as during an upgrade from a build before the compact one:
        // group 1's log then holds classic, compact (while n1 or n3 leads) and classic entries again,
        // which every member applies, and n2 reads back from its own disk when it restarts.
        cluster.classicLogOn("n2");
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        // STRICT: FAST decisions answered but not yet logged may be dropped when the lead moves (the FAST bound).
        cluster.putOrders(NO_REFILL_STRICT, 5);
        final String tenant = tenantOn(1, 0);
        assertTrue(cluster.decide(tenant).allowed());
        assertTrue(cluster.decide(tenant).allowed());
        cluster.nodes().remove("n2").halt();
        Await.until("group 1 to be decided by another node", Duration.ofSeconds(10), () -> cluster.decider(1) != null);
        assertNotEquals("n2", cluster.decider(1));
        assertEquals("n1", cluster.decider(0), "the other groups keep their leaders");
        assertEquals("n3", cluster.decider(2), "the other groups keep their leaders");
        assertTrue(cluster.decide(tenant).allowed(), "the third of five");
        cluster.start("n2");
        Await.until("group 1's leadership to return to n2", Duration.ofSeconds(30), () -> "n2".equals(cluster.decider(1)));
        cluster.clients().remove("n2").close(); // a client of the dead process only: a new one connects to the new
        assertTrue(cluster.decide(tenant).allowed(), "the fourth of five");
        assertTrue(cluster.decide(tenant).allowed(), "the fifth of five");
        assertFalse(cluster.decide(tenant).allowed(), "nothing was forgotten across two leader changes");
        Await.until("every group to converge on every replica", Duration.ofSeconds(20),
            () -> cluster.converged() && cluster.appliedIn("n2", 1) == 6);
    }

    @Test
    void aPlannedHandOverUnderFastLoadDropsNoDecisionAndGoesToAMemberReadyToDecide() throws Exception
    {
        // As in a rolling restart: n2 stops, n1 or n3 takes group 1 (n2's preferred group) and, once
        // n2 is back and caught up, hands the lead back to it on purpose, while FAST calls of a
        // group-1 tenant keep 64 in flight.
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        cluster.putOrders(NO_REFILL.replace("\"burst\":5", "\"burst\":1000000"), 1_000_000);
        final String endpoints = String.join(",", cluster.peers().values().stream().map(a -> "127.0.0.1:" + a.getPort()).toList());
        final String tenant = tenantOn(1, 0);
        final AtomicLong byNodes = new AtomicLong();
        final AtomicLong local = new AtomicLong();
        final List<String> handOvers = new ArrayList<>();
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofSeconds(3)).build())
        {
            // Handed the lead before it had applied what the other groups brought it, n2 led for 0.3-1.5 s
            // without deciding (measured before it waited for a returning member, docs/cluster.md): that
            // happened on every hand-over. A host that starves the whole test for a second does not: so a
            // second hand-over is measured when the first overran its bound, and one of the two must meet it.
            for (int attempt = 1; ; attempt++)
            {
                cluster.nodes().remove("n2").close();
                Await.until("group 1 to be decided by n1 or n3", Duration.ofSeconds(30), () -> cluster.decider(1) != null);
                final String interim = cluster.decider(1);
                final long droppedBefore = cluster.nodes().get(interim).metrics().decisionsDroppedSoFar();
                final HandOver handOver = handBackUnderLoad(client, tenant, interim, byNodes, local);
                handOvers.add(handOver.toString());
                System.out.println("planned hand-over " + attempt + ": " + handOver + "; " + byNodes.get() + " decided by cluster.nodes(), " +
                    local.get() + " locally so far");
                assertEquals(droppedBefore, cluster.nodes().get(interim).metrics().decisionsDroppedSoFar(),
                    "every decision " + interim + " answered before it handed over reached the log");
                assertEquals(0, local.get(), "every call was decided by a node");
                if (handOver.withinBound())
                {
                    break;
                }
                assertTrue(attempt < 2, "callers waited longer than 1 s (plus this JVM's own longest stall) for a node's answer " +
                    "while the lead moved, in both hand-overs: " + handOvers);
            }
        }
        // n2's last FAST batch may still be on its way to the log when the load stops.
        Await.until(() -> "every decision a node answered to reach group 1's log: " + cluster.appliedIn("n2", 1) + " of " + byNodes.get(),
            Duration.ofSeconds(20), () -> cluster.appliedIn("n2", 1) >= byNodes.get() && cluster.converged());
        assertEquals(byNodes.get(), cluster.appliedIn("n2", 1), "every decision a node answered is in group 1's log, once");
    }

    @Test
    void aPlannedStopOfALeaderUnderFastLoadHandsItsLeadOverAndDropsNoAnsweredDecision() throws Exception
    {
        // A rolling restart stops each node in turn: FAST decisions the stopping leader answered but
        // had not logged yet must reach the log before the lead moves (a crash may lose them: halt()).
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        cluster.putOrders(NO_REFILL.replace("\"burst\":5", "\"burst\":1000000"), 1_000_000);
        final String endpoints = String.join(",", cluster.peers().values().stream().map(a -> "127.0.0.1:" + a.getPort()).toList());
        final String tenant = tenantOn(1, 0);
        final AtomicLong byNodes = new AtomicLong();
        final AtomicLong local = new AtomicLong();
        final StoreServer stopping = cluster.nodes().get("n2");
        final long droppedBefore = stopping.metrics().decisionsDroppedSoFar();
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofSeconds(3)).build())
        {
            final FastLoad load = new FastLoad(client, tenant, byNodes, local);
            try
            {
                Await.until("the load to be decided by n2", Duration.ofSeconds(10), () -> byNodes.get() > 2_000);
                final long stopStart = System.nanoTime();
                cluster.nodes().remove("n2").close();
                Await.until("group 1 to be decided by n1 or n3", Duration.ofSeconds(10), () -> cluster.decider(1) != null);
                System.out.println("planned stop of n2: group 1 decided again after " +
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopStart) + " ms");
                final long moved = byNodes.get();
                Await.until("the new leader to decide the load", Duration.ofSeconds(10), () -> byNodes.get() > moved + 2_000);
            }
            finally
            {
                load.stop();
            }
            load.assertEveryCallAnswered();
        }
        assertEquals(0, local.get(), "every call was decided by a node");
        assertEquals(droppedBefore, stopping.metrics().decisionsDroppedSoFar(), "n2 dropped nothing it answered");
        // The new leader's last FAST batch may still be on its way to the log when the load stops.
        Await.until(() -> "every decision a node answered to reach group 1's log: " + cluster.appliedIn("n1", 1) + " of " + byNodes.get(),
            Duration.ofSeconds(20), () -> cluster.appliedIn("n1", 1) >= byNodes.get() && cluster.converged());
        assertEquals(byNodes.get(), cluster.appliedIn("n1", 1), "every decision a node answered is in group 1's log, once");
    }

    /**
     * FAST calls of one tenant from a thread of their own, 64 in flight: counts those nodes decided
     * and those the SDK decided itself, and the longest wait between two answers from nodes.
     */
    private static final class FastLoad
    {
        final AtomicLong longestGapNanos = new AtomicLong();
        private final AtomicLong lastAnswerNanos = new AtomicLong(System.nanoTime());
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Semaphore inFlight = new Semaphore(64);
        private final Thread thread;

        FastLoad(final LimiterClient client, final String tenant, final AtomicLong byNodes, final AtomicLong local)
        {
            thread = new Thread(() ->
            {
                while (running.get())
                {
                    inFlight.acquireUninterruptibly();
                    client.acquire(Descriptor.of(tenant, "/v1/orders/1"), 1).whenComplete((decision, failure) ->
                    {
                        if (failure == null && !decision.degraded())
                        {
                            byNodes.incrementAndGet();
                            final long now = System.nanoTime();
                            longestGapNanos.accumulateAndGet(now - lastAnswerNanos.getAndSet(now), Math::max);
                        }
                        else
                        {
                            local.incrementAndGet();
                        }
                        inFlight.release();
                    });
                }
            }, "load");
            thread.start();
        }

        /** Issues no more calls. */
        void stop() throws InterruptedException
        {
            running.set(false);
            thread.join(5000);
        }

        void assertEveryCallAnswered() throws InterruptedException
        {
            assertTrue(inFlight.tryAcquire(64, 10, TimeUnit.SECONDS), "every call answered");
        }
    }

    /** One hand-over: the longest wait between two answers from nodes, and the longest stall of this JVM meanwhile. */
    private record HandOver(String from, long longestGapMillis, long longestStallMillis)
    {
        /** The bound is the hand-over's: a stall of the whole JVM (seen by a thread that only sleeps 1 ms) is added to it. */
        boolean withinBound()
        {
            return longestGapMillis < 1000 + longestStallMillis;
        }

        @Override
        public String toString()
        {
            return "from " + from + ", longest gap between node answers " + longestGapMillis + " ms, longest stall of this JVM's threads " +
                longestStallMillis + " ms";
        }
    }

    /** Load on {@code tenant} (64 calls in flight) decided by {@code interim}, while n2 starts and takes group 1 back. */
    private HandOver handBackUnderLoad(final LimiterClient client, final String tenant, final String interim, final AtomicLong byNodes,
        final AtomicLong local) throws Exception
    {
        final AtomicLong longestStallNanos = new AtomicLong();
        final AtomicBoolean watching = new AtomicBoolean(true);
        final FastLoad load = new FastLoad(client, tenant, byNodes, local);
        // How long this JVM's threads went without a CPU meanwhile (GC, or a host busy with other
        // work): callers wait that long whatever the nodes do, so it is not the hand-over's.
        final Thread stallWatch = new Thread(() ->
        {
            long last = System.nanoTime();
            while (watching.get())
            {
                LockSupport.parkNanos(1_000_000);
                final long now = System.nanoTime();
                longestStallNanos.accumulateAndGet(now - last - 1_000_000, Math::max);
                last = now;
            }
        }, "stall-watch");
        stallWatch.setDaemon(true);
        stallWatch.start();
        try
        {
            final long before = byNodes.get();
            Await.until("the load to be decided by " + interim, Duration.ofSeconds(10),
                () -> byNodes.get() > before + 2_000);
            load.longestGapNanos.set(0);
            longestStallNanos.set(0);
            cluster.start("n2");
            Await.until(() -> "group 1's lead to move to n2: " + cluster.groupView(1), Duration.ofSeconds(30),
                () -> "n2".equals(cluster.decider(1)));
            final long moved = byNodes.get();
            Await.until("n2 to decide the load", Duration.ofSeconds(10), () -> byNodes.get() > moved + 2_000);
        }
        finally
        {
            watching.set(false);
            load.stop();
        }
        load.assertEveryCallAnswered();
        return new HandOver(interim, load.longestGapNanos.get() / 1_000_000, longestStallNanos.get() / 1_000_000);
    }
}
