package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * FAST decisions are answered before they are committed. When the leader resyncs its tables from
 * the committed ones within its term (a batch that did not commit, say), what it answered and
 * still sends to the log is replayed on the copy: nothing is given back. Only decisions that
 * never reach the log are lost from the tables, and the node counts them
 * ({@code limiter_replication_decisions_dropped_total}); grants stay within the rate and burst plus those.
 */
@Timeout(60)
class FastResyncBoundTest
{
    @TempDir
    Path dir;

    @Test
    void grantsThroughResyncsStayWithinTheRateAndBurstPlusTheDecisionsCountedAsDropped() throws Exception
    {
        final int port = ClusterPorts.free(1, 100)[0];
        Files.createDirectories(dir.resolve("config"));
        final ServerConfig config = TestNode.config(dir.resolve("config"), port, 1)
            .nodeId("n1").peers(Map.of("n1", new InetSocketAddress("127.0.0.1", port))).raftPortOffset(100).dataDir(dir.resolve("n1"));
        try (StoreServer server = new StoreServer(config).start())
        {
            Await.until("the one-member cluster to elect itself", Duration.ofSeconds(20),
                () -> server.replication().canDecide());
            try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + port).deadline(Duration.ofSeconds(2))
                .localFallback(false).build())
            {
                // "orders": 10/s with a burst of 5 per tenant, FAST. One hot tenant, 256 calls always in flight.
                final Descriptor hot = Descriptor.of("acme", "/v1/orders/1");
                final java.util.concurrent.atomic.AtomicLong grantedSoFar = new java.util.concurrent.atomic.AtomicLong();
                final java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
                final java.util.concurrent.Semaphore inFlight = new java.util.concurrent.Semaphore(256);
                final Thread load = new Thread(() ->
                {
                    while (running.get())
                    {
                        inFlight.acquireUninterruptibly();
                        client.acquire(hot, 1).whenComplete((d, failure) ->
                        {
                            if (failure == null && d.allowed() && !d.degraded())
                            {
                                grantedSoFar.incrementAndGet();
                            }
                            inFlight.release();
                        });
                    }
                }, "load");
                final long start = System.nanoTime();
                load.start();
                int resyncs = 0;
                while (System.nanoTime() - start < 3 * SECOND)
                {
                    // a lost batch every 100 ms: the pace of the drill, not a wait for a condition
                    Thread.sleep(100);
                    server.replication().batchLost(); // as when a batch does not commit: resync from the committed tables
                    resyncs++;
                }
                running.set(false);
                load.join(5000);
                inFlight.acquire(256); // every call answered
                final long granted = grantedSoFar.get();
                final double seconds = (System.nanoTime() - start) / 1e9;
                final long dropped = (long)Double.parseDouble(server.metrics().scrape().lines()
                    .filter(l -> l.startsWith("limiter_replication_decisions_dropped_total ")).findFirst().orElseThrow().split(" ")[1]);
                final long bound = 5 + (long)Math.ceil(10 * seconds) + dropped;
                System.out.println(resyncs + " resyncs, " + granted + " granted, " + dropped + " dropped decisions, bound " + bound);
                assertTrue(granted <= bound, granted + " granted > burst + rate x time + dropped = " + bound);
                assertEquals(0, dropped, "a resync within the term drops nothing");
            }
        }
    }
}
