package dev.limiter.envoy;

import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.ClosingTogether;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import dev.limiter.server.testing.Await;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.limiter.envoy.RateLimitServiceTest.descriptor;
import static dev.limiter.envoy.RateLimitServiceTest.policy;
import static dev.limiter.envoy.RateLimitServiceTest.request;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three real nodes with a gateway beside each, called as Envoy calls them: any gateway answers for
 * the whole cluster, and after the leader is killed the others go on answering from the new one.
 */
@Timeout(120)
class RateLimitServiceClusterTest
{
    private static final int RAFT_OFFSET = 100;
    /** STRICT: a grant is answered once a majority holds it, so the leader's death loses none. */
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        policy("per-ip", "edge", "[{\"key\":\"remote_address\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":3,\"consistency\":\"STRICT\"") +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1000,\"owner\":\"t\"}}";

    @TempDir
    Path dir;

    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private final Map<String, StoreServer> nodes = new LinkedHashMap<>();
    private final Map<String, RlsServer> gateways = new LinkedHashMap<>();
    private final Map<String, ManagedChannel> channels = new LinkedHashMap<>();

    @AfterEach
    void stopAll() throws InterruptedException
    {
        for (final ManagedChannel channel : channels.values())
        {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        gateways.values().forEach(RlsServer::close); // and their clients
        ClosingTogether.close(nodes.values());
    }

    private void startCluster() throws Exception
    {
        final int[] ports = ClusterPorts.free(3, RAFT_OFFSET);
        for (int i = 0; i < 3; i++)
        {
            peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", ports[i]));
        }
        final Path policies = dir.resolve("policies.json");
        Files.writeString(policies, POLICIES);
        for (final String id : peers.keySet())
        {
            nodes.put(id, new StoreServer(new ServerConfig().host("127.0.0.1").port(peers.get(id).getPort()).adminPort(-1).shards(2)
                .ioThreads(1).policiesFile(policies).nodeId(id).peers(peers).raftPortOffset(RAFT_OFFSET).dataDir(dir.resolve(id))).start());
        }
        final List<String> endpoints = new ArrayList<>();
        peers.values().forEach(a -> endpoints.add("127.0.0.1:" + a.getPort()));
        for (final String id : peers.keySet())
        {
            // As ./limiter cluster runs it: one gateway beside each node, its SDK knowing every node.
            final RlsServer gateway = RlsServer.start(LimiterClient.builder().endpoints(endpoints.toArray(String[]::new))
                .deadline(Duration.ofMillis(500)), 1, new InetSocketAddress("127.0.0.1", 0), Duration.ofMillis(500), false);
            gateways.put(id, gateway);
            channels.put(id, NettyChannelBuilder.forAddress("127.0.0.1", gateway.port()).usePlaintext().build());
        }
    }

    private StoreServer leader()
    {
        Await.until("a leader", Duration.ofSeconds(20),
            () -> nodes.values().stream().anyMatch(n -> n.replication().canDecide()));
        return nodes.values().stream().filter(n -> n.replication().canDecide()).findFirst().orElseThrow();
    }

    private RateLimitResponse call(final String gateway, final String address)
    {
        return RateLimitServiceGrpc.newBlockingStub(channels.get(gateway)).withDeadlineAfter(1, TimeUnit.SECONDS)
            .shouldRateLimit(request("edge", descriptor("remote_address", address)));
    }

    private static boolean byNode(final RateLimitResponse response)
    {
        return !response.hasDynamicMetadata();
    }

    @Test
    void anyGatewayAnswersForTheWholeClusterAndAfterTheLeaderIsKilledTheOthersAnswerFromTheNewOne() throws Exception
    {
        startCluster();
        final StoreServer first = leader();
        // One bucket, whichever gateway is asked: three grants in all, then over the limit everywhere.
        final List<String> ids = List.copyOf(peers.keySet());
        for (int i = 0; i < 3; i++)
        {
            final RateLimitResponse response = call(ids.get(i), "10.1.0.1");
            assertEquals(Code.OK, response.getOverallCode(), ids.get(i) + ": " + response);
            assertTrue(byNode(response), response.toString());
            assertEquals(2 - i, response.getStatuses(0).getLimitRemaining());
        }
        for (final String id : ids)
        {
            final RateLimitResponse response = call(id, "10.1.0.1");
            assertEquals(Code.OVER_LIMIT, response.getOverallCode(), id);
            assertTrue(byNode(response), response.toString());
        }

        final String killed = nodes.entrySet().stream().filter(e -> e.getValue() == first).findFirst().orElseThrow().getKey();
        channels.remove(killed).shutdownNow();
        gateways.remove(killed).close();
        final long closing = System.nanoTime();
        nodes.remove(killed).close();
        final long killedAt = System.nanoTime(); // closed: its ports and Raft server are gone
        System.out.printf("closing the leader took %.0f ms%n", (killedAt - closing) / 1e6);

        final List<String> survivors = List.copyOf(nodes.keySet());
        long firstNodeAnswerNanos = -1;
        int local = 0;
        int failed = 0;
        for (int attempt = 0; firstNodeAnswerNanos < 0 && System.nanoTime() - killedAt < TimeUnit.SECONDS.toNanos(10); attempt++)
        {
            try
            {
                final RateLimitResponse response = call(survivors.get(attempt % 2), "10.1.1." + (attempt % 250));
                if (byNode(response))
                {
                    firstNodeAnswerNanos = System.nanoTime() - killedAt;
                }
                else
                {
                    local++;
                }
            }
            catch (final StatusRuntimeException e)
            {
                failed++;
            }
        }
        assertTrue(firstNodeAnswerNanos >= 0, "no node answered through a surviving gateway within 10 s (" + local + " decided locally, " +
            failed + " failed)");
        System.out.printf("first node decision through a surviving gateway %.0f ms after the leader was killed (%d decided locally, %d failed before)%n",
            firstNodeAnswerNanos / 1e6, local, failed);
        assertTrue(firstNodeAnswerNanos < TimeUnit.SECONDS.toNanos(5), firstNodeAnswerNanos / 1_000_000 + " ms");
        assertFalse(leader() == first);
        // STRICT grants survived the leader: the address is still over its limit, on the new leader's word.
        for (final String id : survivors)
        {
            final RateLimitResponse response = call(id, "10.1.0.1");
            assertTrue(byNode(response), response.toString());
            assertEquals(Code.OVER_LIMIT, response.getOverallCode(), id);
        }
    }
}
