package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.status.ShardStatus;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Status and metrics are read from other threads than the shards' (event loops, the Raft apply
 * thread) while those grow their tables, which frees the old slot memory at once: they must read
 * only what the owners published. Here a one-member cluster (deciding and committed tables) grows
 * from its initial slots through several doublings while STATUS, GET /status and GET /metrics are
 * polled in a loop.
 */
@Timeout(120)
class ShardMemoryOwnershipTest
{
    @TempDir
    Path dir;

    @Test
    void statusAndMetricsPolledWhileTablesGrowReadOnlyPublishedState() throws Exception
    {
        final int port = ClusterPorts.free(1, 100)[0];
        java.nio.file.Files.createDirectories(dir.resolve("config"));
        final ServerConfig config = TestNode.config(dir.resolve("config"), port, 2)
            .maxBucketsPerShard(200_000).keyArenaBytesPerShard(200_000 * 32)
            .nodeId("n1").peers(Map.of("n1", new InetSocketAddress("127.0.0.1", port))).raftPortOffset(100).dataDir(dir.resolve("n1"));
        try (StoreServer server = new StoreServer(config).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + port).deadline(Duration.ofSeconds(10)).build())
        {
            final HttpClient http = HttpClient.newHttpClient();
            final AtomicBoolean stop = new AtomicBoolean();
            final AtomicLong polls = new AtomicLong();
            final List<String> problems = java.util.Collections.synchronizedList(new ArrayList<>());
            final Thread poller = new Thread(() ->
            {
                while (!stop.get())
                {
                    try
                    {
                        final String status = RawConnection.exchange(port, MessageType.STATUS, new byte[0]).text();
                        final String viaHttp = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort() + "/status")).build(),
                            HttpResponse.BodyHandlers.ofString()).body();
                        final String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort() + "/metrics")).build(),
                            HttpResponse.BodyHandlers.ofString()).body();
                        if (!StatusJson.parse(status).hasDigest() || StatusJson.parse(viaHttp).getShardsCount() != 2 ||
                            !metrics.contains("limiter_buckets"))
                        {
                            problems.add("incomplete answer: " + status);
                        }
                        polls.incrementAndGet();
                    }
                    catch (final Exception e)
                    {
                        problems.add(e.toString());
                    }
                }
            }, "status-poller");
            poller.start();
            // 60k distinct tenants over two shards: each table doubles twice, from 16k slots to 64k.
            final int tenants = 60_000;
            for (int from = 0; from < tenants; from += 10_000)
            {
                final List<CompletableFuture<dev.limiter.client.Decision>> calls = new ArrayList<>();
                for (int i = from; i < from + 10_000; i++)
                {
                    calls.add(client.acquire(Descriptor.builder().tenant("t" + i).route("/v1/orders/1").build(), 1));
                }
                CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).join();
                final long local = calls.stream().filter(c -> c.join().degraded()).count();
                assertEquals(0, local, "decisions the SDK made itself (no node answered): " + local);
            }
            stop.set(true);
            poller.join(10_000);
            assertTrue(problems.isEmpty(), problems.size() + " problems, first: " + problems.stream().limit(3).toList());
            assertTrue(polls.get() >= 5, "only " + polls + " status polls ran while the tables grew");

            // Once the log has caught up, what status says is what the committed tables hold.
            final long[] buckets = {-1};
            Await.until("every decision applied and counted in STATUS", Duration.ofSeconds(20), () ->
            {
                buckets[0] = bucketsIn(statusText(port));
                return buckets[0] == tenants && server.replication().buckets().appliedDecisions() == tenants;
            }, () -> buckets[0] + " buckets in STATUS");
            assertEquals(tenants, buckets[0], "buckets in STATUS once every decision is applied");
        }
    }

    /** The node's STATUS answer, read on a connection of its own. */
    private static String statusText(final int port)
    {
        try
        {
            return RawConnection.exchange(port, MessageType.STATUS, new byte[0]).text();
        }
        catch (final java.io.IOException e)
        {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static long bucketsIn(final String status)
    {
        return StatusJson.parse(status).getShardsList().stream().mapToLong(ShardStatus::getBuckets).sum();
    }
}
