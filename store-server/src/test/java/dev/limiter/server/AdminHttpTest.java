package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static dev.limiter.server.TestNode.SECOND;
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
            assertTrue(metrics.contains("limiter_decision_latency_seconds{quantile=\"0.99\"}"), metrics);
            assertTrue(metrics.contains("limiter_buckets{shard=\"0\"} 1.0"), metrics);

            final HttpResponse<String> health = get(server.adminPort(), "/health", "GET");
            assertEquals(200, health.statusCode());
            assertTrue(health.body().contains("\"status\":\"UP\""), health.body());
            assertTrue(health.body().contains("\"policySetVersion\":3"), health.body());

            assertEquals(404, get(server.adminPort(), "/nope", "GET").statusCode());
            assertEquals(405, get(server.adminPort(), "/metrics", "POST").statusCode());
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
