package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.LocalCluster;
import dev.limiter.server.testing.NoLeakedBuffers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Decisions replicated across three nodes in one JVM (loopback, real Ratis): every replica ends with equal tables. */
@ExtendWith(NoLeakedBuffers.class)
@Timeout(180)
class ClusterReplicationTest
{
    /** A new cluster for each test, in a directory of its own; stopped after the test. */
    @RegisterExtension
    final LocalCluster cluster = new LocalCluster();

    @Test
    void followersSendCallersToTheLeaderAndEveryReplicaConvergesToTheSameTables() throws Exception
    {
        cluster.startAll();
        final StoreServer leader = cluster.leader();
        try (LimiterClient client = cluster.client())
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
        Await.until("every replica to apply every decision and hold equal tables", Duration.ofSeconds(20),
            () -> leader.replication().buckets().appliedDecisions() >= 1000 && cluster.converged());
    }

    @Test
    void aFrameRefusedOverloadedChargedNothingSoTheSdksRetriesChargeEachCallOnce() throws Exception
    {
        // Any batch a shard hands its log puts it behind until that batch commits: frames across both
        // shards are refused often, and the SDK sends their calls again.
        cluster.maxUncommittedBytes(64);
        cluster.startAll();
        cluster.leader();
        final List<String> endpoints = new ArrayList<>();
        cluster.peers().values().forEach(a -> endpoints.add("127.0.0.1:" + a.getPort()));
        try (LimiterClient client = LimiterClient.builder().endpoints(String.join(",", endpoints)).connections(1)
            .deadline(Duration.ofSeconds(10)).build())
        {
            Await.until("the policy set", Duration.ofSeconds(10), () -> client.policies().version() > 0);
            for (int round = 0; round < 5; round++)
            {
                // Calls issued together share frames, and their tenants fall on both shards.
                final List<CompletableFuture<Decision>> answers = new ArrayList<>();
                for (int i = 0; i < 100; i++)
                {
                    answers.add(client.acquire(Descriptor.of("fresh-" + round + "-" + i, "/v1/orders/1"), 1));
                }
                for (final CompletableFuture<Decision> answer : answers)
                {
                    final Decision d = answer.join();
                    assertFalse(d.degraded(), "decided by a node: " + d);
                    // Each tenant is new and asked once: a bucket of burst 5 charged once leaves 4.
                    assertEquals(4, d.remaining(), "charged exactly once, however often its frame was refused: " + d);
                }
            }
            assertTrue(client.stats().overloadedFrames() > 0, "frames were refused OVERLOADED and sent again");
        }
    }

    @Test
    void hierarchicalDecisionsReplicateToEqualTables() throws Exception
    {
        final String token = "drill-token-0123456789abcdef";
        cluster.startAll(1, token);
        final StoreServer leader = cluster.leader();
        final java.net.http.HttpResponse<String> put = AdminCalls.call(java.net.http.HttpClient.newHttpClient(), leader.adminPort(), "PUT",
            "/v1/policies/orders-global", "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":5,\"burst\":30,\"scope\":\"GLOBAL\"," +
                "\"stacked\":true,\"owner\":\"platform\",\"reason\":\"route capacity\"}", token);
        assertEquals(200, put.statusCode(), put.body());
        int deniedByGlobal = 0;
        int deniedByTenant = 0;
        try (LimiterClient client = cluster.client())
        {
            // One tenant runs through its own burst of 5 (refused by orders), then 30 tenants twice each
            // run through what is left of the route's 30 (refused by orders-global).
            for (int i = 0; i < 90; i++)
            {
                final String tenant = i < 30 ? "heavy" : "tenant-" + (i % 30);
                final Decision decision = client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
                if (!decision.allowed())
                {
                    deniedByGlobal += decision.policyId().equals("orders-global") ? 1 : 0;
                    deniedByTenant += decision.policyId().equals("orders") ? 1 : 0;
                }
            }
        }
        assertTrue(deniedByGlobal > 0 && deniedByTenant > 0, "both scopes refused some: global " + deniedByGlobal + ", tenant " + deniedByTenant);
        Await.until("replicas to converge on the hierarchical decisions", Duration.ofSeconds(10), cluster::converged);
    }

    @Test
    void windowAndSeveralLimitPoliciesDecideOnTheLeadersUtcClockAndReplicateToEqualTables() throws Exception
    {
        final String token = "drill-token-0123456789abcdef";
        cluster.startAll(2, token);
        final StoreServer leader = cluster.leader();
        final java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        assertEquals(200, AdminCalls.call(http, leader.adminPort(), "PUT", "/v1/policies/daily", "{\"selector\":{\"route\":\"/v1/daily/{id}\"}," +
            "\"rate\":5,\"period\":\"86400s\",\"algorithm\":\"FIXED_WINDOW\",\"owner\":\"billing\",\"reason\":\"5 a day\"}", token).statusCode());
        assertEquals(200, AdminCalls.call(http, leader.adminPort(), "PUT", "/v1/policies/rolling", "{\"selector\":{\"route\":\"/v1/rolling/{id}\"}," +
            "\"rate\":5,\"period\":\"3600s\",\"algorithm\":\"SLIDING_WINDOW\",\"owner\":\"search\",\"reason\":\"5 an hour\"}", token).statusCode());
        // Several limits: 4 an hour in a bucket, and at most 3 a day: the day's refusals charge nothing.
        assertEquals(200, AdminCalls.call(http, leader.adminPort(), "PUT", "/v1/policies/both", "{\"selector\":{\"route\":\"/v1/both/{id}\"}," +
            "\"rate\":4,\"period\":\"3600s\",\"burst\":4,\"limits\":[{\"rate\":3,\"period\":\"86400s\",\"algorithm\":\"FIXED_WINDOW\"}]," +
            "\"owner\":\"data\",\"reason\":\"4 an hour, 3 a day\"}", token).statusCode());
        final long dayBefore = Math.floorDiv(System.currentTimeMillis(), 86_400_000L);
        int dailyAllowed = 0;
        int rollingAllowed = 0;
        int bothAllowed = 0;
        Decision dailyRefused = null;
        try (LimiterClient client = cluster.client())
        {
            for (int tenant = 0; tenant < 20; tenant++)
            {
                for (int i = 0; i < 8; i++)
                {
                    final Decision daily = client.acquireBlocking(Descriptor.of("tenant-" + tenant, "/v1/daily/1"), 1);
                    final Decision rolling = client.acquireBlocking(Descriptor.of("tenant-" + tenant, "/v1/rolling/1"), 1);
                    assertFalse(daily.degraded() || rolling.degraded(), "decided by a node");
                    dailyAllowed += daily.allowed() ? 1 : 0;
                    rollingAllowed += rolling.allowed() ? 1 : 0;
                    dailyRefused = daily.allowed() ? dailyRefused : daily;
                    bothAllowed += client.acquireBlocking(Descriptor.of("tenant-" + tenant, "/v1/both/1"), 1).allowed() ? 1 : 0;
                }
            }
        }
        final long msToMidnight = 86_400_000L - Math.floorMod(System.currentTimeMillis(), 86_400_000L);
        if (Math.floorDiv(System.currentTimeMillis(), 86_400_000L) == dayBefore)
        {
            assertEquals(100, dailyAllowed, "20 tenants x 5 a day");
            assertEquals(60, bothAllowed, "20 tenants x 3 a day (the tighter of the two limits)");
            assertTrue(Math.abs(dailyRefused.retryAfter().toMillis() - msToMidnight) < 5000,
                "a refusal says when the UTC day ends: " + dailyRefused.retryAfter() + ", " + msToMidnight + " ms from now");
        }
        assertEquals(100, rollingAllowed, "20 tenants x 5 an hour (an hour's boundary on the way keeps the count, weighted)");
        Await.until("replicas to converge on the window decisions", Duration.ofSeconds(10),
            () -> leader.replication().buckets().appliedDecisions() >= 440 && cluster.converged());
    }

    @Test
    void tenantScopedHierarchicalDecisionsOnFourShardsReplicateToEqualTables() throws Exception
    {
        final String token = "drill-token-0123456789abcdef";
        cluster.startAll(4, token);
        final StoreServer leader = cluster.leader();
        final java.net.http.HttpResponse<String> put = AdminCalls.call(java.net.http.HttpClient.newHttpClient(), leader.adminPort(), "PUT",
            "/v1/policies/orders-user", "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"burst\":2,\"scope\":\"PRINCIPAL\"," +
                "\"stacked\":true,\"owner\":\"platform\",\"reason\":\"per user\"}", token);
        assertEquals(200, put.statusCode(), put.body());
        int deniedByUser = 0;
        int deniedByTenant = 0;
        try (LimiterClient client = cluster.client())
        {
            // Twelve tenants over the four shards, three users each, three calls a user: each user's
            // third call is refused by its allowance (2), and the tenant's burst (5) refuses the rest.
            for (int t = 0; t < 12; t++)
            {
                for (int u = 0; u < 3; u++)
                {
                    for (int i = 0; i < 3; i++)
                    {
                        final Decision decision = client.acquireBlocking(
                            Descriptor.builder().tenant("tenant-" + t).principal("user-" + u).route("/v1/orders/1").build(), 1);
                        assertFalse(decision.degraded(), "decided by a node: " + decision);
                        if (!decision.allowed())
                        {
                            deniedByUser += decision.policyId().equals("orders-user") ? 1 : 0;
                            deniedByTenant += decision.policyId().equals("orders") ? 1 : 0;
                        }
                    }
                }
            }
        }
        assertTrue(deniedByUser > 0 && deniedByTenant > 0, "both scopes refused some: user " + deniedByUser + ", tenant " + deniedByTenant);
        Await.until("replicas to converge on the hierarchical decisions", Duration.ofSeconds(10), cluster::converged);
    }
}
