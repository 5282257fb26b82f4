package dev.limiter.envoy.api;

import dev.limiter.client.LimiterClient;
import dev.limiter.envoy.RlsServer;
import dev.limiter.server.testing.ClosingTogether;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Three real store nodes in this JVM and one API gateway in front of them, as {@code ./limiter cluster} and {@code
 * ./limiter api} run.
 */
final class ApiCluster implements AutoCloseable
{
    static final String TOKEN = "test-token-0123456789abcdef";
    /** A token that may ask for the tenants bound-a and bound-b only. */
    static final String BOUND_TOKEN = "bound-token-0123456789abcdef";
    /**
     * orders: 5 tokens per tenant that do not come back within a test, so what was charged shows in
     * what is left; exports: one lease at a time per tenant.
     */
    static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"period\":\"3600s\",\"burst\":5," +
        "\"scope\":\"TENANT\",\"owner\":\"t\"}," +
        "{\"id\":\"exports\",\"selector\":{\"route\":\"/v1/exports\"},\"maxConcurrent\":1,\"leaseTtl\":\"60s\"," +
        "\"scope\":\"TENANT\"," +
        "\"owner\":\"t\"}]," +
        "\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1000,\"owner\":\"t\"}}";
    private static final int RAFT_OFFSET = 100;

    private final List<StoreServer> nodes = new ArrayList<>();
    private ApiServer api;

    ApiCluster(final Path dir) throws Exception
    {
        try
        {
            final int[] ports = ClusterPorts.free(3, RAFT_OFFSET);
            final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
            for (int i = 0; i < 3; i++)
            {
                peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", ports[i]));
            }
            final Path policies = dir.resolve("policies.json");
            Files.writeString(policies, POLICIES);
            for (final String id : peers.keySet())
            {
                nodes.add(new StoreServer(new ServerConfig().host("127.0.0.1").port(peers.get(id).getPort())
                    .adminPort(-1).shards(1).ioThreads(1).policiesFile(policies).nodeId(id).peers(peers)
                    .raftPortOffset(RAFT_OFFSET).dataDir(dir.resolve(id))).start());
            }
            final List<String> endpoints = new ArrayList<>();
            peers.values().forEach(a -> endpoints.add("127.0.0.1:" + a.getPort()));
            // A generous deadline: the nodes, the gateway and the test share a busy machine.
            api = ApiServer.start(LimiterClient.builder().endpoints(endpoints.toArray(String[]::new))
                .deadline(Duration.ofSeconds(1)), 1,
                new ApiServer.Settings(new InetSocketAddress("127.0.0.1", 0), new InetSocketAddress("127.0.0.1", 0),
                    Duration.ofSeconds(1), BearerTokens.read(Files.writeString(dir.resolve("api-tokens"),
                    "# any tenant\n" + TOKEN + "\n" + BOUND_TOKEN + " bound-a,bound-b\n")), RlsServer.Port.PLAINTEXT));
        }
        catch (final Exception | Error e)
        {
            close();
            throw e;
        }
    }

    ApiServer api()
    {
        return api;
    }

    @Override
    public void close()
    {
        if (api != null)
        {
            api.close();
        }
        ClosingTogether.close(nodes);
    }
}
