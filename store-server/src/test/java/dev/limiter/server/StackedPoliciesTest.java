package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

import static dev.limiter.server.testing.AdminCalls.TOKEN;
import static dev.limiter.server.testing.AdminCalls.call;
import static dev.limiter.server.testing.AdminCalls.metric;
import static dev.limiter.server.testing.AdminCalls.metrics;
import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Stacked policies set through the admin API: every scope charged or none, a global budget split into shares
 * across shards, and a shared pool whose reserve serves the higher priorities.
 */
@Timeout(60)
class StackedPoliciesTest
{
    @TempDir
    Path dir;

    @Test
    void aRequestIsChargedAgainstEveryStackedScopeOrNoneAndTheAnswerNamesTheLimitingPolicy() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // The route's global budget (3, refilled 1/s) stacked on the per-tenant orders policy (burst 5).
            final String global = "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"burst\":%d,\"scope\":\"GLOBAL\"," +
                "\"stacked\":true,\"owner\":\"platform\",\"reason\":\"route capacity\"}";
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", String.format(global, 3)).statusCode());

            final Decision first = client.acquireBlocking(Descriptor.of("a", "/v1/orders/1"), 1);
            assertTrue(first.allowed());
            assertEquals("orders-global", first.policyId(), "allowed: the answer names the tightest scope");
            assertEquals(2, first.remaining());
            assertTrue(client.acquireBlocking(Descriptor.of("b", "/v1/orders/1"), 1).allowed());
            assertTrue(client.acquireBlocking(Descriptor.of("c", "/v1/orders/1"), 1).allowed());
            for (int i = 0; i < 3; i++)
            {
                final Decision refused = client.acquireBlocking(Descriptor.of("d", "/v1/orders/1"), 1);
                assertFalse(refused.allowed());
                assertEquals("orders-global", refused.policyId(), "denied: the answer names the scope that refused");
                assertTrue(refused.retryAfter().toMillis() > 0);
            }
            // A roomier global budget (a new version, new bucket): d's own bucket was never charged above.
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", String.format(global, 1000)).statusCode());
            int allowed = 0;
            Decision last = null;
            for (int i = 0; i < 6; i++)
            {
                last = client.acquireBlocking(Descriptor.of("d", "/v1/orders/1"), 1);
                allowed += last.allowed() ? 1 : 0;
            }
            assertEquals(5, allowed, "d's tenant bucket was full: the refused requests charged none of its scopes");
            assertEquals("orders", last.policyId(), "now the tenant's own policy is what refuses");
            final String metrics = metrics(server);
            assertTrue(metric(metrics, "limiter_decisions_total{outcome=\"denied\",policy=\"orders-global\"}") >= 3, metrics);
        }
    }

    @Test
    void splitAcrossShardsIsRefusedWhereItCannotHoldAndSaysWhy() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 4).adminToken(TOKEN)))
        {
            final String split = "{\"selector\":{\"route\":\"/all\"},\"owner\":\"p\",\"reason\":\"r\",\"splitAcrossShards\":true,%s}";
            final HttpResponse<String> tenant = call(server, "PUT", "/v1/policies/everyone", String.format(split, "\"rate\":100"));
            assertEquals(400, tenant.statusCode());
            assertTrue(tenant.body().contains("splitAcrossShards: only a GLOBAL bucket is split") &&
                tenant.body().contains("was TENANT"), tenant.body());
            final HttpResponse<String> leases = call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"scope\":\"GLOBAL\",\"maxConcurrent\":10"));
            assertEquals(400, leases.statusCode());
            assertTrue(leases.body().contains("splitAcrossShards: not with maxConcurrent"), leases.body());
            final HttpResponse<String> small = call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"scope\":\"GLOBAL\",\"rate\":100,\"burst\":3"));
            assertEquals(400, small.statusCode());
            assertTrue(small.body().contains("has splitAcrossShards: on a node with 4 shards") &&
                small.body().contains("raise the burst to at least 4"), small.body());
            final HttpResponse<String> leased = call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"scope\":\"GLOBAL\",\"rate\":100,\"tokenLease\":{}"));
            assertEquals(400, leased.statusCode());
            assertTrue(leased.body().contains("splitAcrossShards: not with tokenLease"), leased.body());
            final HttpResponse<String> stacked = call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"rate\":100,\"stacked\":true"));
            assertEquals(400, stacked.statusCode(), "a stacked TENANT budget is not split either");
            assertTrue(stacked.body().contains("splitAcrossShards: only a GLOBAL bucket is split"), stacked.body());
            assertEquals(null, server.policyState().current("everyone"), "nothing refused was stored");
            assertEquals(200, call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"scope\":\"GLOBAL\",\"rate\":100,\"burst\":4")).statusCode());
        }
    }

    @Test
    void aStackedGlobalBudgetTooSmallToSplitIntoOneShareAShardIsRefused() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 2).adminToken(TOKEN)))
        {
            final String global = "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,%s\"scope\":\"GLOBAL\",\"stacked\":true," +
                "\"owner\":\"p\",\"reason\":\"r\"}";
            final HttpResponse<String> refused = call(server, "PUT", "/v1/policies/orders-global", String.format(global, ""));
            assertEquals(400, refused.statusCode());
            assertTrue(refused.body().contains("split into 2 equal shares") && refused.body().contains("raise the burst to at least 2"),
                refused.body());
            assertEquals(null, server.policyState().current("orders-global"));
            final HttpResponse<String> extra = call(server, "PUT", "/v1/policies/orders-global", String.format(global,
                "\"burst\":2,\"limits\":[{\"rate\":1,\"period\":\"3600s\",\"algorithm\":\"FIXED_WINDOW\"}],"));
            assertEquals(400, extra.statusCode(), "every limit of a split budget is split alike");
            assertTrue(extra.body().contains("in its limits[0] a window") && extra.body().contains("rate of 1 cannot be split into 2 shares"),
                extra.body());
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", String.format(global, "\"burst\":2,")).statusCode());
        }
    }

    @Test
    void aStackedGlobalBudgetOnSeveralShardsKeepsAnEqualShareOnEachAndNeverAdmitsMoreThanTheWhole() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 4).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // The route's capacity: 40 tokens, one more per hour, stacked on the per-tenant orders policy (burst 5).
            // On four shards each keeps a share: 10 tokens, one more every four hours.
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", "{\"selector\":{\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":1,\"period\":\"3600s\",\"burst\":40,\"scope\":\"GLOBAL\",\"stacked\":true,\"owner\":\"platform\"," +
                "\"reason\":\"route capacity\"}").statusCode());
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-hot", "{\"selector\":{\"tenant\":\"hot\",\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":1000,\"burst\":1000,\"owner\":\"platform\",\"reason\":\"a big tenant\"}").statusCode());
            // One tenant alone gets its shard's share, not the whole budget (the cost of splitting).
            int hotAllowed = 0;
            for (int i = 0; i < 30; i++)
            {
                final Decision decision = orders(client, "hot", "u");
                if (decision.allowed())
                {
                    hotAllowed++;
                    continue;
                }
                assertEquals("orders-global", decision.policyId(), decision.toString());
                assertEquals(10, decision.limit(), "the answer shows the share that refused: " + decision);
                assertEquals(0, decision.remaining());
                assertTrue(decision.retryAfter().toMinutes() > 60, "a token returns to the share every four hours: " + decision);
            }
            assertEquals(10, hotAllowed);
            // Many tenants over every shard take the other shares, and never more than the whole 40.
            int allowed = hotAllowed;
            for (int t = 0; t < 160; t++)
            {
                final Decision decision = orders(client, "tenant-" + t, "u");
                allowed += decision.allowed() ? 1 : 0;
                if (!decision.allowed())
                {
                    assertEquals("orders-global", decision.policyId(), decision.toString());
                }
            }
            assertEquals(40, allowed, "every share spent, none exceeded");
            // Four hours refill one token on each share: the hot tenant gets exactly its shard's one.
            clock.advance(4 * 3600 * SECOND);
            assertTrue(orders(client, "hot", "u").allowed());
            assertFalse(orders(client, "hot", "u").allowed());
            final String metrics = metrics(server);
            assertTrue(metric(metrics, "limiter_decisions_total{outcome=\"allowed\",policy=\"orders-global\"}") >= 1, metrics);
        }
    }

    @Test
    void tenantScopedStackedPoliciesChargeAllOrNoneOnANodeWithSeveralShards() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 4).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // Each user's allowance (burst 2) stacked on the per-tenant orders policy (burst 5): both on the tenant's shard.
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-user", "{\"selector\":{\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":1,\"burst\":2,\"scope\":\"PRINCIPAL\",\"stacked\":true,\"owner\":\"platform\",\"reason\":\"per user\"}").statusCode());
            // Twelve tenants, spread over the four shards.
            for (int t = 0; t < 12; t++)
            {
                final String tenant = "tenant-" + t;
                assertTrue(orders(client, tenant, "u1").allowed());
                assertTrue(orders(client, tenant, "u1").allowed());
                final Decision userSpent = orders(client, tenant, "u1");
                assertFalse(userSpent.allowed(), tenant);
                assertEquals("orders-user", userSpent.policyId(), "the user's budget refused: " + tenant);
                assertTrue(orders(client, tenant, "u2").allowed());
                assertTrue(orders(client, tenant, "u2").allowed());
                // The tenant's bucket holds 5: 4 charged so far, none for the refused request.
                assertTrue(orders(client, tenant, "u3").allowed(), "a refused request charged none of its budgets: " + tenant);
                final Decision tenantSpent = orders(client, tenant, "u3");
                assertFalse(tenantSpent.allowed(), tenant);
                assertEquals("orders", tenantSpent.policyId(), "now the tenant's own policy refuses: " + tenant);
            }
        }
    }

    @Test
    void onSeveralShardsARequestWhoseOwnPolicyIsGlobalIsNotChargedAgainstStackedPolicies() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 4).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // Each tenant's share of the GLOBAL "hot" route, stacked on it: the two buckets cannot share a shard.
            assertEquals(200, call(server, "PUT", "/v1/policies/hot-per-tenant", "{\"selector\":{\"route\":\"/hot\"}," +
                "\"rate\":100,\"burst\":100,\"scope\":\"TENANT\",\"stacked\":true,\"owner\":\"platform\",\"reason\":\"share\"}").statusCode());
            final LimiterRequestException refused = assertThrows(LimiterRequestException.class,
                () -> client.acquireBlocking(Descriptor.of("acme", "/hot"), 1));
            assertTrue(refused.getMessage().contains("'hot' is GLOBAL-scoped") && refused.getMessage().contains("--shards 1"),
                refused.getMessage());
            assertTrue(client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1).allowed(), "requests no stacked policy matches are decided");
        }
    }

    /** One call, decided by the node (never by the SDK on its own). */
    private static Decision orders(final LimiterClient client, final String tenant, final String user)
    {
        final Decision decision = client.acquireBlocking(Descriptor.builder().tenant(tenant).principal(user).route("/v1/orders/1").build(), 1);
        assertFalse(decision.degraded(), "decided by the node: " + decision);
        return decision;
    }

    @Test
    void underSaturationLowerPrioritiesAreRefusedFirstWhileTheReserveServesHigherOnes() throws Exception
    {
        // One shard holds the whole pool and reserve; on two, each shard holds half of both, so the
        // premium tenant finds the reserve of its own shard only (2 of the 4).
        reserveServesHigherPriorities(1, 4);
        reserveServesHigherPriorities(2, 2);
    }

    private void reserveServesHigherPriorities(final int shards, final int premiumExpected) throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, shards).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // Premium tenant acme: its own policy ranks 10. Everyone shares a route pool of 10, of which 4
            // are kept for requests ranking 10 or more.
            assertEquals(200, call(server, "PUT", "/v1/policies/acme-orders", "{\"selector\":{\"tenant\":\"acme\",\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":100,\"priority\":10,\"owner\":\"sales\",\"reason\":\"premium\"}").statusCode());
            final HttpResponse<String> pool = call(server, "PUT", "/v1/policies/orders-pool", "{\"selector\":{\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":1,\"period\":\"60s\",\"burst\":10,\"scope\":\"GLOBAL\",\"stacked\":true,\"reserve\":{\"tokens\":4,\"minPriority\":10}," +
                "\"owner\":\"platform\",\"reason\":\"shared capacity\"}");
            assertEquals(200, pool.statusCode(), pool.body());

            int standard = 0;
            for (int t = 0; t < 20; t++)
            {
                final Decision d = client.acquireBlocking(Descriptor.of("tenant-" + t, "/v1/orders/1"), 1);
                assertFalse(d.degraded(), "decided by the node: " + d);
                standard += d.allowed() ? 1 : 0;
                if (!d.allowed())
                {
                    assertEquals("orders-pool", d.policyId(), "refused by the shared pool's reserve");
                    assertTrue(d.retryAfter().toSeconds() > 0, d.toString());
                }
            }
            assertEquals(6, standard, "standard tenants stop where the reserve begins, on " + shards + " shards");
            int premium = 0;
            for (int i = 0; i < 6; i++)
            {
                final Decision d = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
                assertFalse(d.degraded(), "decided by the node: " + d);
                premium += d.allowed() ? 1 : 0;
            }
            assertEquals(premiumExpected, premium, "the premium tenant still gets the reserve, then the pool is empty for everyone");

            final HttpResponse<String> bad = call(server, "PUT", "/v1/policies/orders-pool2", "{\"selector\":{\"route\":\"/v2\"}," +
                "\"rate\":5,\"reserve\":{\"tokens\":5},\"owner\":\"p\",\"reason\":\"r\"}");
            assertEquals(400, bad.statusCode());
            assertTrue(bad.body().contains("set stacked: true") && bad.body().contains("below the burst"), bad.body());
        }
    }
}
