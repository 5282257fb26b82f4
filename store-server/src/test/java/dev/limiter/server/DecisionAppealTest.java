package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.DecisionIds;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Decision ids from a real node to the SDK, and the appeal of a refused request by its id: found in the
 * node's sampled rejections, appealed through the admin API, counted by limiter_false_rejections_total
 * (a cluster keeps them across a restart: ClusterFailoverTest). With the node gone the SDK's own decision has no id.
 */
@Timeout(60)
class DecisionAppealTest
{
    private static final String TOKEN = "test-token-0123456789abcdef";

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newHttpClient();

    private HttpResponse<String> call(final StoreServer server, final String method, final String path,
        final String body) throws Exception
    {
        return AdminCalls.call(http, server.adminPort(), method, path, body, TOKEN);
    }

    @Test
    void aRefusedRequestsIdIsFoundAppealedAndCountedAndADegradedDecisionHasNone() throws Exception
    {
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        final StoreServer server = new StoreServer(TestNode.config(dir, 0, 2).adminToken(TOKEN), clock).start();
        final int port = server.port();
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:"
            + port).deadline(Duration.ofSeconds(5)) .build())
        {
            final Descriptor orders = Descriptor.of("acme", "/v1/orders/17");
            Decision decision = client.acquireBlocking(orders, 1);
            assertTrue(decision.allowed());
            final String allowedId = decision.decisionId().orElseThrow();
            assertNull(DecisionIds.problem(allowedId), allowedId);
            for (int i = 0; i < 10 && decision.allowed(); i++)
            {
                decision = client.acquireBlocking(orders, 1);
            }
            assertFalse(decision.allowed(), "orders has a burst of 5");
            final String id = decision.decisionId().orElseThrow();

            final HttpResponse<String> found = call(server, "GET", "/v1/decisions/rejected/" + id, null);
            assertEquals(200, found.statusCode(), found.body());
            assertTrue(found.body().contains("\"policy\":\"orders\",\"version\":1,\"tenant\":\"acme\"," +
                "\"route\":\"/v1/orders/{id}\",\"reason\":\"RATE_LIMITED\""), found.body());
            assertEquals(404, call(server, "GET", "/v1/decisions/rejected/" + allowedId, null).statusCode(),
                "an allowed decision is not sampled");
            assertTrue(call(server, "GET", "/v1/decisions/rejected?tenant=acme", null).body()
                .contains("\"sampled\":1,\"dropped\":0,\"decisions\":[{\"id\":\"" + id + "\""));

            final String appeal = "{\"decisionId\":\"" + id
                + "\",\"owner\":\"payments\",\"reason\":\"contracted burst\","
                + "\"policy\":\"orders\",\"version\":1,\"tenant\":\"acme\",\"route\":\"/v1/orders/{id}\"}";
            final HttpResponse<String> made = call(server, "POST", "/v1/appeals", appeal);
            assertEquals(200, made.statusCode(), made.body());
            final HttpResponse<String> again = call(server, "POST", "/v1/appeals", appeal);
            assertEquals(409, again.statusCode(), again.body());
            assertTrue(again.body().contains("already appealed"), again.body());
            assertTrue(call(server, "GET", "/v1/appeals?since=0", null).body().contains("\"decisionId\":\"" + id
                + "\""));
            assertTrue(call(server, "GET", "/v1/audit?policy=orders", null).body().contains("APPEAL_ADDED"));
            final String metrics = http.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("http://127.0.0.1:" + server.adminPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(metrics.contains("limiter_false_rejections_total{policy=\"orders\"} 1.0"), metrics);

            server.close();
            final Decision alone = client.acquire(orders, 1).get();
            assertTrue(alone.degraded(), alone.toString());
            assertTrue(alone.decisionId().isEmpty(), "the SDK decided alone: nothing to appeal");
        }
        finally
        {
            server.close();
        }
    }
}
