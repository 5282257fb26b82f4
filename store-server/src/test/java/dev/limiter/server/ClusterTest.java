package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Three replicated nodes in one JVM on loopback, storage in a temp directory, real Ratis. */
@Timeout(180)
class ClusterTest
{
    private static final int RAFT_OFFSET = 100;

    @TempDir
    Path dir;

    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private final Map<String, StoreServer> nodes = new LinkedHashMap<>();

    @AfterEach
    void stopAll()
    {
        nodes.values().forEach(StoreServer::close);
    }

    private static boolean bindable(final int port)
    {
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress()))
        {
            return true;
        }
        catch (final IOException e)
        {
            return false;
        }
    }

    private void choosePorts()
    {
        while (true)
        {
            final int base = 20_000 + ThreadLocalRandom.current().nextInt(30_000);
            boolean free = true;
            for (int i = 0; i < 3 && free; i++)
            {
                free = bindable(base + i) && bindable(base + i + RAFT_OFFSET);
            }
            if (free)
            {
                for (int i = 0; i < 3; i++)
                {
                    peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", base + i));
                }
                return;
            }
        }
    }

    private StoreServer start(final String id) throws InterruptedException
    {
        final ServerConfig config = TestNode.config(dir.resolve(id + "-config"), peers.get(id).getPort(), 2)
            .adminPort(-1).nodeId(id).peers(peers).raftPortOffset(RAFT_OFFSET).dataDir(dir.resolve(id));
        final StoreServer server = new StoreServer(config).start();
        nodes.put(id, server);
        return server;
    }

    private void startCluster() throws Exception
    {
        choosePorts();
        for (final String id : peers.keySet())
        {
            java.nio.file.Files.createDirectories(dir.resolve(id + "-config"));
            start(id);
        }
    }

    private static void await(final String what, final Duration timeout, final BooleanSupplier condition) throws InterruptedException
    {
        final long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() > end)
            {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    private StoreServer leader() throws InterruptedException
    {
        final StoreServer[] found = new StoreServer[1];
        await("a ready leader", Duration.ofSeconds(20), () ->
        {
            for (final StoreServer node : nodes.values())
            {
                if (node.replication().canDecide())
                {
                    found[0] = node;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    private LimiterClient client()
    {
        final List<String> endpoints = new ArrayList<>();
        peers.values().forEach(a -> endpoints.add("127.0.0.1:" + a.getPort()));
        return LimiterClient.builder().endpoints(String.join(",", endpoints)).connections(1)
            .deadline(Duration.ofSeconds(3)).build();
    }

    @Test
    void followersSendCallersToTheLeaderAndEveryReplicaConvergesToTheSameTables() throws Exception
    {
        startCluster();
        final StoreServer leader = leader();
        try (LimiterClient client = client())
        {
            final List<CompletableFuture<Decision>> calls = new ArrayList<>();
            for (int round = 0; round < 5; round++)
            {
                for (int i = 0; i < 200; i++)
                {
                    calls.add(client.acquire(Descriptor.of("tenant-" + i, "/v1/orders/" + i), 1));
                }
            }
            int allowed = 0;
            for (final CompletableFuture<Decision> call : calls)
            {
                allowed += call.get().allowed() ? 1 : 0;
            }
            assertEquals(1000, allowed, "200 tenants x 5 requests, burst 5 each: all allowed");
        }
        final long decisions = leader.replication().buckets().appliedDecisions();
        assertTrue(decisions >= 1000);
        await("every replica to apply every decision", Duration.ofSeconds(20), () ->
            nodes.values().stream().allMatch(n -> n.replication().buckets().appliedDecisions() == decisions));
        final long digest = leader.replication().buckets().digest();
        for (final StoreServer node : nodes.values())
        {
            assertEquals(digest, node.replication().buckets().digest(), "committed tables equal on every replica");
        }
    }

    @Test
    void killingTheLeaderUnderLoadLosesNoStrictTokenAndANewLeaderServesWithinASecond() throws Exception
    {
        startCluster();
        final StoreServer first = leader();
        final Descriptor strictKey = Descriptor.of("any", "/strict"); // 20/s, burst 20, STRICT, one bucket
        final LongAdder granted = new LongAdder();
        final AtomicLong lastSuccess = new AtomicLong(System.nanoTime());
        final AtomicLong longestGapNanos = new AtomicLong();
        final AtomicBoolean running = new AtomicBoolean(true);
        final long start = System.nanoTime();
        try (LimiterClient client = client())
        {
            final List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++)
            {
                final Thread thread = new Thread(() ->
                {
                    while (running.get())
                    {
                        try
                        {
                            final Decision d = client.acquireBlocking(strictKey, 1);
                            final long now = System.nanoTime();
                            final long previous = lastSuccess.getAndSet(now);
                            longestGapNanos.accumulateAndGet(now - previous, Math::max);
                            granted.add(d.allowed() ? 1 : 0);
                        }
                        catch (final LimiterException e)
                        {
                            // during the election: refused or timed out, never granted
                        }
                    }
                });
                threads.add(thread);
                thread.start();
            }
            Thread.sleep(1000);
            final String killed = first.replication().node().nodeId();
            nodes.remove(killed).close();
            final StoreServer second = leader();
            assertNotEquals(killed, second.replication().node().nodeId());
            Thread.sleep(1500);
            running.set(false);
            for (final Thread thread : threads)
            {
                thread.join(10_000);
            }
        }
        final double wallSeconds = (System.nanoTime() - start) / 1e9;
        final long bound = 20 + (long)Math.ceil(20 * wallSeconds);
        assertTrue(granted.sum() <= bound, "STRICT grants " + granted.sum() + " exceed burst + rate x time = " + bound);
        assertTrue(granted.sum() > 20, "the key kept being served: " + granted.sum());
        assertTrue(longestGapNanos.get() < 1_000_000_000L,
            "longest time without an answer across the failover: " + longestGapNanos.get() / 1_000_000 + " ms");
    }

    @Test
    void aWholeClusterRestartKeepsADrainedBucketDrained() throws Exception
    {
        startCluster();
        leader();
        final Descriptor key = Descriptor.of("drained", "/strict");
        try (LimiterClient client = client())
        {
            int allowed = 0;
            while (client.acquireBlocking(key, 1).allowed())
            {
                allowed++;
            }
            assertTrue(allowed >= 20);
        }
        for (final String id : new ArrayList<>(nodes.keySet()))
        {
            nodes.remove(id).close();
        }
        for (final String id : peers.keySet())
        {
            start(id);
        }
        leader();
        try (LimiterClient client = client())
        {
            final Decision after = client.acquireBlocking(key, 1);
            assertFalse(after.allowed() && after.remaining() > 5,
                "the bucket was drained before the restart; the downtime is not credited as refill: " + after);
        }
    }

    @Test
    void aMemberCutOffFromTheMajorityStopsDecidingAndALoneNodeNeverStarts() throws Exception
    {
        startCluster();
        final StoreServer leader = leader();
        final String survivor = leader.replication().node().nodeId();
        for (final String id : new ArrayList<>(nodes.keySet()))
        {
            if (!id.equals(survivor))
            {
                nodes.remove(id).close();
            }
        }
        // The old leader hears from nobody: within its step-down time it must stop deciding.
        await("the isolated leader to stop deciding", Duration.ofSeconds(10), () -> !leader.replication().canDecide());
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + peers.get(survivor).getPort())
            .deadline(Duration.ofMillis(500)).build())
        {
            final long start = System.nanoTime();
            assertThrows(LimiterException.class, () -> client.acquireBlocking(Descriptor.of("t", "/v1/orders/1"), 1),
                "a minority never decides");
            assertTrue(System.nanoTime() - start < 2_000_000_000L, "and the caller is not held past its deadline");
        }
        Thread.sleep(1000);
        assertFalse(leader.replication().canDecide(), "still not deciding alone");
    }
}
