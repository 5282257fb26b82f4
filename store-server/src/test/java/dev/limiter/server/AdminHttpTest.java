package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.BuildInfo;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.server.admin.AdminServer;
import dev.limiter.server.admin.NodeStatus;
import dev.limiter.server.admin.Readiness;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.net.Listener;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.TestNode;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(60)
class AdminHttpTest
{
    @TempDir
    Path dir;

    private static HttpResponse<String> get(final int port, final String path, final String method) throws Exception
    {
        return HttpClient.newHttpClient().send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).method(method, HttpRequest.BodyPublishers.noBody()).build(),
            HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void shouldExposeDecisionsByPolicyAndOutcomeLatencyAndHealth() throws Exception
    {
        try (StoreServer server = TestNode.start(dir, new ManualClock(SECOND), 1);
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            for (int i = 0; i < 7; i++)
            {
                client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
            }
            final String metrics = get(server.adminPort(), "/metrics", "GET").body();
            assertTrue(metrics.contains("limiter_decisions_total{outcome=\"allowed\",policy=\"orders\"} 5.0"), metrics);
            assertTrue(metrics.contains("limiter_decisions_total{outcome=\"denied\",policy=\"orders\"} 2.0"), metrics);
            assertTrue(metrics.contains("limiter_policy_version{policy=\"orders\"} 1.0"), metrics);
            assertTrue(metrics.contains("limiter_decision_latency_seconds_bucket{le=\"0.005\"}"), metrics);
            assertTrue(metrics.contains("limiter_buckets{shard=\"0\"} 1.0"), metrics);

            final HttpResponse<String> health = get(server.adminPort(), "/health", "GET");
            assertEquals(200, health.statusCode());
            assertTrue(health.body().contains("\"status\":\"UP\""), health.body());
            assertTrue(health.body().contains("\"policySetVersion\":3"), health.body());
            assertEquals(200, get(server.adminPort(), "/health/live", "GET").statusCode());
            final HttpResponse<String> ready = get(server.adminPort(), "/health/ready", "GET");
            assertEquals(200, ready.statusCode(), ready.body());
            assertEquals("{\"status\":\"READY\"}\n", ready.body());
            final String buildInfo = metrics.lines().filter(l -> l.startsWith("limiter_build_info{")).findFirst().orElse("");
            assertTrue(buildInfo.contains("version=\"" + BuildInfo.current().version() + "\"") &&
                buildInfo.contains("commit=\"" + BuildInfo.current().commit() + "\"") && buildInfo.endsWith(" 1"), buildInfo);

            assertEquals(404, get(server.adminPort(), "/nope", "GET").statusCode());
            assertEquals(405, get(server.adminPort(), "/metrics", "POST").statusCode());
        }
    }

    @Test
    void aRequestThatFailsUnexpectedlyIsAnswered500NamingTheFailureNotDroppedUnanswered() throws Exception
    {
        // As when a jar is rebuilt under a running node and a class it has not loaded yet is gone.
        final NodeStatus broken = new NodeStatus()
        {
            @Override
            public String statusJson()
            {
                throw new NoClassDefFoundError("dev/limiter/protocol/policy/RollbackRequest");
            }

            @Override
            public boolean healthy()
            {
                return true;
            }

            @Override
            public Readiness readiness()
            {
                return new Readiness(List.of());
            }

            @Override
            public String healthJson()
            {
                return "{\"status\":\"UP\"}";
            }

            @Override
            public HotKeyReport hotKeys()
            {
                return HotKeyReport.getDefaultInstance();
            }

            @Override
            public dev.limiter.server.admin.RejectionSamples rejections()
            {
                return new SampledRejections("n1", new dev.limiter.server.engine.RejectedDecisions());
            }
        };
        final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        final AdminServer admin = new AdminServer("127.0.0.1", 0, new ServerMetrics(), broken, group, group, NioServerSocketChannel.class,
            null, "token", null, new AdminServer.Limits(8, 60_000, 10_000), null);
        try
        {
            admin.start();
            final HttpResponse<String> failed = get(admin.port(), "/status", "GET");
            assertEquals(500, failed.statusCode(), failed.body());
            assertTrue(failed.body().contains("the node failed to answer: java.lang.NoClassDefFoundError: " +
                "dev/limiter/protocol/policy/RollbackRequest (its log has the stack)"), failed.body());
            // The port still serves: the next connection is answered as usual.
            assertEquals(200, get(admin.port(), "/health", "GET").statusCode());
        }
        finally
        {
            admin.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void aMemberWithoutALeaderIsLiveButNotReadyAndSaysWhy() throws Exception
    {
        // Its two peers never start: it cannot elect a leader, so no traffic should be sent to it.
        final Map<String, InetSocketAddress> members = new LinkedHashMap<>();
        for (final String id : List.of("n1", "n2", "n3"))
        {
            try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1")))
            {
                members.put(id, new InetSocketAddress("127.0.0.1", free.getLocalPort()));
            }
        }
        try (StoreServer member = new StoreServer(TestNode.config(dir, members.get("n1").getPort(), 1).nodeId("n1")
            .peers(members).raftPortOffset(1000)).start())
        {
            assertEquals(200, get(member.adminPort(), "/health/live", "GET").statusCode());
            final HttpResponse<String> ready = get(member.adminPort(), "/health/ready", "GET");
            assertEquals(503, ready.statusCode(), ready.body());
            assertTrue(ready.body().startsWith("{\"status\":\"NOT_READY\",\"reasons\":[\"Raft group 0 has no known leader\""),
                ready.body());
        }
    }

    @Test
    void aPortInUseIsNamedWithTheOptionThatChoosesAnother() throws Exception
    {
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1")))
        {
            final int port = taken.getLocalPort();
            final StoreServer data = new StoreServer(TestNode.config(Files.createDirectories(dir.resolve("data")), port, 1).adminPort(-1));
            final Listener.ListenFailure dataTaken = assertThrows(Listener.ListenFailure.class, data::start);
            data.close();
            assertTrue(dataTaken.getMessage().startsWith("cannot listen on the data port 127.0.0.1:" + port + " (") &&
                dataTaken.getMessage().endsWith("): the port is in use: is another node running? stop it, or choose another with --port"),
                dataTaken.getMessage());

            final StoreServer admin = new StoreServer(TestNode.config(Files.createDirectories(dir.resolve("admin")), 0, 1).adminPort(port));
            final Listener.ListenFailure adminTaken = assertThrows(Listener.ListenFailure.class, admin::start);
            admin.close();
            assertTrue(adminTaken.getMessage().startsWith("cannot listen on the admin port 127.0.0.1:" + port + " (") &&
                adminTaken.getMessage().endsWith("choose another with --admin-port"), adminTaken.getMessage());
        }
    }

    @Test
    void shouldRefuseToStartOnAnInvalidOrMissingPolicyFile() throws Exception
    {
        final Path bad = dir.resolve("bad.json");
        Files.writeString(bad, "{\"policies\":[{\"id\":\"x\",\"rate\":0}]}");
        final dev.limiter.protocol.PolicyValidationException invalid = assertThrows(
            dev.limiter.protocol.PolicyValidationException.class,
            () -> new StoreServer(new ServerConfig().port(0).adminPort(-1).policiesFile(bad)));
        assertTrue(invalid.errors().stream().anyMatch(e -> e.contains("policies[0] (x).rate")), invalid.getMessage());
        assertTrue(invalid.errors().stream().anyMatch(e -> e.contains("policies[0] (x).owner")), invalid.getMessage());

        final dev.limiter.protocol.PolicyValidationException missing = assertThrows(
            dev.limiter.protocol.PolicyValidationException.class,
            () -> new StoreServer(new ServerConfig().port(0).adminPort(-1).policiesFile(dir.resolve("absent.json"))));
        assertTrue(missing.getMessage().contains("cannot read policy file"), missing.getMessage());

        assertThrows(IllegalArgumentException.class, () -> new StoreServer(new ServerConfig().port(70000)));
        assertThrows(IllegalArgumentException.class, () -> new StoreServer(new ServerConfig().shards(0)));
    }

    @Test
    void shouldStartWithStackedPoliciesOnSeveralShardsAndRefuseAGlobalOneTooSmallToSplit() throws Exception
    {
        final String file = "{\"policies\":[{\"id\":\"%s\",\"selector\":{\"route\":\"/x\"},\"rate\":100,\"burst\":%d,\"scope\":\"%s\"," +
            "\"stacked\":true,\"owner\":\"o\"}]}";
        for (final String scope : new String[] {"TENANT", "GLOBAL"})
        {
            final Path fine = dir.resolve(scope + ".json");
            Files.writeString(fine, String.format(file, "total", 4, scope));
            try (StoreServer server = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(4)
                .policiesFile(fine).dataDir(dir)).start())
            {
                assertTrue(server.port() > 0, scope);
            }
        }
        final Path routeCapacity = dir.resolve("route-capacity.json");
        Files.writeString(routeCapacity, String.format(file, "route-capacity", 3, "GLOBAL"));
        final dev.limiter.protocol.PolicyValidationException refused = assertThrows(
            dev.limiter.protocol.PolicyValidationException.class,
            () -> new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(4).policiesFile(routeCapacity).dataDir(dir)));
        assertTrue(refused.errors().stream().anyMatch(e -> e.contains("'route-capacity' is GLOBAL-scoped") &&
            e.contains("raise the burst to at least 4")), refused.getMessage());
    }

    @Test
    void shouldServeTheSamplePolicyFileFromTheRepository() throws Exception
    {
        try (StoreServer server = new StoreServer(new ServerConfig().port(0).adminPort(-1)
            .policiesFile(Path.of("../config/policies.json"))).start())
        {
            assertEquals(16, server.policies().size(), "fifteen policies and the default");
        }
    }
}
