package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

import static dev.limiter.server.testing.AdminCalls.TOKEN;
import static dev.limiter.server.testing.AdminCalls.call;
import static dev.limiter.server.testing.AdminCalls.metric;
import static dev.limiter.server.testing.AdminCalls.metrics;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The policies resource of the admin API on one node: changes, rollbacks, schedules, rollouts, conflicts. */
@Timeout(60)
class AdminPoliciesTest
{
    private static final String ORDERS_V2 = "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"period\":\"1s\"," +
        "\"burst\":1,\"owner\":\"team-orders\",\"reason\":\"tighten during the incident\"}";

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newHttpClient();

    private static int burstOf(final LimiterClient client)
    {
        final Decision decision = client.acquireBlocking(Descriptor.of("acme-" + System.nanoTime(), "/v1/orders/1"), 1);
        return (int)decision.limit();
    }

    private static long versionFor(final LimiterClient client, final String tenant)
    {
        return client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1).policyVersion();
    }

    @Test
    void aChangeIsInForceAtOnceAndARollbackRestoresTheOldLimitWithAuditRecords() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            assertEquals(5, burstOf(client));
            final HttpResponse<String> put = call(server, "PUT", "/v1/policies/orders", ORDERS_V2);
            assertEquals(200, put.statusCode(), put.body());
            assertTrue(put.body().contains("\"version\": \"2\""), put.body());
            assertEquals(1, burstOf(client), "version 2 decides the next request");

            final HttpResponse<String> rollback = call(server, "POST", "/v1/policies/orders/rollback",
                "{\"toVersion\":1,\"reason\":\"v2 starved checkout\"}");
            assertEquals(200, rollback.statusCode(), rollback.body());
            assertEquals(5, burstOf(client), "version 3 (= 1) decides again");

            final HttpResponse<String> history = call(server, "GET", "/v1/policies/orders/history", null);
            assertEquals(200, history.statusCode());
            assertTrue(history.body().contains("\"rolledBackFrom\": \"1\""), history.body());
            final HttpResponse<String> audit = call(server, "GET", "/v1/audit?policy=orders", null);
            assertTrue(audit.body().contains("POLICY_UPDATED") && audit.body().contains("POLICY_ROLLED_BACK"), audit.body());
            assertTrue(audit.body().contains("\"actor\": \"alice\"") && audit.body().contains("v2 starved checkout"), audit.body());
            assertEquals(200, call(server, "GET", "/v1/audit?since=2020-01-01T00:00:00Z&limit=1", null).statusCode());

            final HttpResponse<String> one = call(server, "GET", "/v1/policies/orders", null);
            assertTrue(one.body().contains("\"version\": \"3\""), one.body());
            final HttpResponse<String> all = call(server, "GET", "/v1/policies", null);
            assertTrue(all.body().contains("\"id\": \"hot\"") && all.body().contains("\"defaultPolicy\""), all.body());
        }
    }

    @Test
    void aCallWithoutTheRightTokenIsRefusedAndChangesNothing() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN)))
        {
            final long before = server.policyState().setVersion();
            for (final String token : new String[] {null, "wrong-token-0123456789", TOKEN + "x"})
            {
                final HttpResponse<String> put = call(http, server.adminPort(), "PUT", "/v1/policies/orders", ORDERS_V2, token);
                assertEquals(401, put.statusCode());
                assertTrue(put.body().contains("bearer token"), put.body());
                assertTrue(put.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Bearer"));
                assertEquals(401, call(http, server.adminPort(), "GET", "/v1/policies", null, token).statusCode());
            }
            assertEquals(before, server.policyState().setVersion());
            assertEquals(1, server.policyState().current("orders").getVersion());
            // The open endpoints stay open.
            assertEquals(200, call(http, server.adminPort(), "GET", "/health", null, null).statusCode());
        }
    }

    @Test
    void badChangesAreRefusedWithFieldErrorsAndChangeNothing() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN)))
        {
            final HttpResponse<String> invalid = call(server, "PUT", "/v1/policies/orders",
                "{\"rate\":0,\"burst\":1,\"selector\":{\"route\":\"/v1/orders/{id}\"},\"owner\":\"\"}");
            assertEquals(400, invalid.statusCode());
            assertTrue(invalid.body().contains("policy.rate:") && invalid.body().contains("policy.owner:") &&
                invalid.body().contains("policy.reason:"), invalid.body());

            final HttpResponse<String> unknownField = call(server, "PUT", "/v1/policies/orders",
                ORDERS_V2.replace("\"selector\":{", "\"selector\":{\"colour\":\"red\","));
            assertEquals(400, unknownField.statusCode());
            assertTrue(unknownField.body().contains("colour"), unknownField.body());

            final HttpResponse<String> window = call(server, "PUT", "/v1/policies/orders",
                ORDERS_V2.replace("\"rate\":1,", "\"rate\":3000000000,\"algorithm\":\"SLIDING_WINDOW\",")
                    .replace("\"burst\":1,", "\"burst\":7,"));
            assertEquals(400, window.statusCode(), window.body());
            assertTrue(window.body().contains("policy.burst: a SLIDING_WINDOW grants `rate` per window and has no burst of its own") &&
                window.body().contains("policy.rate: a SLIDING_WINDOW counts at most 2147483647 per period"), window.body());

            assertEquals(400, call(server, "PUT", "/v1/policies/orders", "{not json").statusCode());
            assertEquals(400, call(server, "PUT", "/v1/policies/other", ORDERS_V2).statusCode(), "id in body differs from path");
            assertEquals(400, call(server, "PUT", "/v1/policies/orders", "").statusCode());
            assertEquals(400, call(server, "PUT", "/v1/policies/orders", ORDERS_V2.replace("\"rate\":1,", "\"rate\":-5,")).statusCode());
            assertEquals(400, call(server, "POST", "/v1/policies/orders/rollback", "{\"toVersion\":7,\"reason\":\"x\"}").statusCode());
            assertEquals(404, call(server, "POST", "/v1/policies/none/rollback", "{\"toVersion\":1,\"reason\":\"x\"}").statusCode());
            assertEquals(404, call(server, "GET", "/v1/policies/none", null).statusCode());
            assertEquals(404, call(server, "DELETE", "/v1/policies/none?reason=x", null).statusCode());
            assertEquals(400, call(server, "DELETE", "/v1/policies/orders", null).statusCode(), "a reason is required");
            assertEquals(400, call(server, "GET", "/v1/audit?since=yesterday", null).statusCode());
            assertEquals(400, call(server, "GET", "/v1/audit?limit=0", null).statusCode());
            assertEquals(405, call(server, "POST", "/v1/policies", "{}").statusCode());
            assertEquals(404, call(server, "GET", "/v1/nothing", null).statusCode());

            assertEquals(1, server.policyState().current("orders").getVersion(), "nothing changed");
            assertEquals(1, server.policyState().audit(r -> true, 100).size(), "only the seed is audited");
        }
    }

    @Test
    void aChangeBasedOnAnOlderVersionIsRefusedWithAConflict() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN)))
        {
            final String basedOnOne = ORDERS_V2.replace("\"owner\"", "\"version\":\"1\",\"owner\"");
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", basedOnOne).statusCode(), "version 1 is the newest: accepted");
            final HttpResponse<String> stale = call(server, "PUT", "/v1/policies/orders", basedOnOne.replace("\"rate\":1,", "\"rate\":2,"));
            assertEquals(409, stale.statusCode(), stale.body());
            assertTrue(stale.body().contains("is at version 2, not 1"), stale.body());
            assertEquals(2, server.policyState().current("orders").getVersion(), "nothing changed");
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", ORDERS_V2.replace("\"rate\":1,", "\"rate\":2,")).statusCode(),
                "without a version there is no check");
        }
    }

    @Test
    void aScheduledVersionDecidesFromItsEffectiveTimeOn() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final long from = System.currentTimeMillis() + 1000;
            final HttpResponse<String> put = call(server, "PUT", "/v1/policies/orders",
                ORDERS_V2.replace("\"owner\"", "\"effectiveFrom\":\"" + java.time.Instant.ofEpochMilli(from) + "\",\"owner\""));
            assertEquals(200, put.statusCode(), put.body());
            assertEquals(5, burstOf(client), "version 1 until the effective time");
            final int[] burst = {5};
            Await.until("version 2 to decide", Duration.ofMillis(from + 3000 - System.currentTimeMillis()),
                () -> (burst[0] = burstOf(client)) != 5);
            assertEquals(1, burst[0], "version 2 decides once its time has come");
            assertTrue(System.currentTimeMillis() >= from, "not before");
            assertTrue(call(server, "GET", "/v1/audit?policy=orders", null).body().contains("POLICY_IN_FORCE"));
        }
    }

    @Test
    void aRolloutDecidesListedTenantsAndAStableShareWhileTheOthersStayOnThePreviousVersion() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 2).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final String step = ORDERS_V2.replace("\"reason\"", "\"rollout\":{\"tenants\":[\"vip\"],\"percent\":%d,\"othersInShadow\":true},\"reason\"");
            final HttpResponse<String> first = call(server, "PUT", "/v1/policies/orders", String.format(step, 0));
            assertEquals(200, first.statusCode(), first.body());
            assertTrue(first.body().contains("\"fallback\""), "the cluster names the version the others stay on: " + first.body());
            assertEquals(2, versionFor(client, "vip"), "listed");
            assertEquals(1, versionFor(client, "tenant-a"), "0%: everyone else on version 1");

            assertEquals(200, call(server, "PUT", "/v1/policies/orders", String.format(step, 50)).statusCode());
            final java.util.Set<String> onNew = new java.util.HashSet<>();
            for (int t = 0; t < 200; t++)
            {
                final long version = versionFor(client, "t" + t);
                assertTrue(version == 3 || version == 1, "the newest step (3) or the version before the rollout (1): " + version);
                if (version == 3)
                {
                    onNew.add("t" + t);
                }
            }
            assertTrue(onNew.size() > 60 && onNew.size() < 140, "about half of 200 tenants: " + onNew.size());
            for (int t = 0; t < 200; t += 7)
            {
                assertEquals(onNew.contains("t" + t) ? 3 : 1, versionFor(client, "t" + t), "stable per tenant");
            }
            final String metrics = metrics(server);
            assertTrue(metrics.contains("limiter_policy_rollout_percent{policy=\"orders\"} 50.0"), metrics);
            assertTrue(metric(metrics, "limiter_shadow_decisions_total{outcome=\"would_allow\",policy=\"orders\"}") +
                metric(metrics, "limiter_shadow_decisions_total{outcome=\"would_deny\",policy=\"orders\"}") > 0,
                "the tenants left out were evaluated against the new version in shadow");

            final HttpResponse<String> moved = call(server, "PUT", "/v1/policies/orders",
                String.format(step, 10).replace("/v1/orders/{id}", "/v1/orders/{order}/x"));
            assertEquals(400, moved.statusCode(), "the selector stays during a rollout: " + moved.body());

            assertEquals(200, call(server, "PUT", "/v1/policies/orders", ORDERS_V2.replace("incident", "incident, rolled out")).statusCode());
            assertEquals(4, versionFor(client, "tenant-a"), "complete: every tenant on the new version");
            final String audit = call(server, "GET", "/v1/audit?policy=orders", null).body();
            assertTrue(audit.contains("POLICY_ROLLOUT") && audit.contains("others on version 1"), audit);
        }
    }

    @Test
    void connectedSdksHoldTheSetAndArePushedEveryChangeWithinOneSecond() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            Await.until("the client to fetch the policy set on connect", Duration.ofSeconds(2),
                () -> client.policies().version() != 0);
            assertEquals(3, client.policies().version(), "the file's set version, fetched on connect");
            assertTrue(client.policies().current().orElseThrow().policies().getPoliciesList().stream().anyMatch(p -> p.getId().equals("orders")));

            final long changedAt = System.nanoTime();
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", ORDERS_V2).statusCode());
            final Duration leftOfTheSecond = Duration.ofNanos(1_000_000_000L - (System.nanoTime() - changedAt));
            Await.until("version 4 pushed to the client", leftOfTheSecond, () -> client.policies().version() == 4);
            assertEquals(4, client.policies().version(), "pushed within a second");
            assertEquals(1, client.policies().current().orElseThrow().policies().getPoliciesList().stream()
                .filter(p -> p.getId().equals("orders")).findFirst().orElseThrow().getRate());

            final RawConnection.Answer malformed = RawConnection.exchange(server.port(), dev.limiter.protocol.MessageType.POLICIES, new byte[0]);
            assertTrue(malformed.isError() && malformed.errorMessage().contains("POLICIES body is empty"), malformed.toString());
        }
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient quiet = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).followPolicies(false).build())
        {
            // time in which a client that does not follow policies must not fetch them
            Thread.sleep(200);
            assertEquals(0, quiet.policies().version(), "following policies is optional");
        }
        assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().policyTtl(Duration.ofMillis(10)));
    }
}
