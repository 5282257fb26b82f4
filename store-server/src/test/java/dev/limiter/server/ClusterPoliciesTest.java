package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.LocalCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A policy change on a cluster of three nodes in one JVM (loopback, real Ratis): in or out of force on every node. */
@Timeout(180)
class ClusterPoliciesTest
{
    /** A new cluster for each test, in a directory of its own; stopped after the test. */
    @RegisterExtension
    final LocalCluster cluster = new LocalCluster();

    @Test
    void aBadPolicyVersionRolledBackIsOutOfForceOnEveryNodeWithinOneSecond() throws Exception
    {
        final String token = "drill-token-0123456789abcdef";
        cluster.startAll(2, token);
        final StoreServer leader = cluster.leader();
        final StoreServer follower = cluster.nodes().values().stream().filter(n -> n != leader).findFirst().orElseThrow();
        final java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        final String bad = "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"burst\":1,\"owner\":\"team-orders\"," +
            "\"reason\":\"a typo: meant 100\"}";

        final java.net.http.HttpResponse<String> misdirected = AdminCalls.call(http, follower.adminPort(), "PUT", "/v1/policies/orders", bad, token);
        assertEquals(421, misdirected.statusCode(), misdirected.body());
        assertTrue(misdirected.body().contains("\"leader\": \"" + leader.replication().node().nodeId() + "\""), misdirected.body());

        try (LimiterClient client = cluster.client())
        {
            assertEquals(5, client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1).limit());
            final java.net.http.HttpResponse<String> put = AdminCalls.call(http, leader.adminPort(), "PUT", "/v1/policies/orders", bad, token);
            assertEquals(200, put.statusCode(), put.body());
            Await.until("version 2 on every node", Duration.ofSeconds(1), () -> allAtVersion(2));
            assertEquals(1, client.acquireBlocking(Descriptor.of("globex", "/v1/orders/1"), 1).limit());

            final long start = System.nanoTime();
            final java.net.http.HttpResponse<String> rollback = AdminCalls.call(http, leader.adminPort(), "POST",
                "/v1/policies/orders/rollback", "{\"toVersion\":1,\"reason\":\"v2 denied real traffic\"}", token);
            assertEquals(200, rollback.statusCode(), rollback.body());
            final long setVersion = leader.policyState().setVersion();
            Await.until("the rollback on every node and in the connected SDK", Duration.ofSeconds(1),
                () -> allAtVersion(3) &&
                client.policies().version() == setVersion);
            final long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(elapsedMillis < 1000, "in force everywhere after " + elapsedMillis + " ms");
            assertEquals(10, client.policies().current().orElseThrow().policies().getPoliciesList().stream()
                .filter(p -> p.getId().equals("orders")).findFirst().orElseThrow().getRate(), "the SDK holds the old limits again");
            assertEquals(5, client.acquireBlocking(Descriptor.of("initech", "/v1/orders/1"), 1).limit(), "the old limit decides again");
        }
        for (final StoreServer node : cluster.nodes().values())
        {
            final java.util.List<String> actions = node.policyState().audit(r -> r.getPolicyId().equals("orders"), 10).stream()
                .map(dev.limiter.protocol.policy.AuditRecord::getAction).toList();
            assertEquals(java.util.List.of("POLICY_UPDATED", "POLICY_ROLLED_BACK"), actions);
        }
        Await.until("replicas to converge", Duration.ofSeconds(10), cluster::converged);
    }

    private boolean allAtVersion(final long version)
    {
        return cluster.nodes().values().stream().allMatch(n -> n.policies().policies().stream()
            .anyMatch(p -> p.id().equals("orders") && p.version() == version));
    }
}
