package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.LocalCluster;
import dev.limiter.server.testing.NoLeakedBuffers;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Who takes part in a cluster of three nodes in one JVM (loopback, real Ratis): a member cut off stops deciding,
 * one added at run time catches up, one removed stops, one with another policy file adopts the replicated set.
 */
@ExtendWith(NoLeakedBuffers.class)
@Timeout(180)
class ClusterMembershipTest
{
    /** A new cluster for each test, in a directory of its own; stopped after the test. */
    @RegisterExtension
    final LocalCluster cluster = new LocalCluster();

    @Test
    void aMemberCutOffFromTheMajorityStopsDecidingAndALoneNodeNeverStarts() throws Exception
    {
        cluster.startAll();
        final StoreServer leader = cluster.leader();
        final String survivor = leader.replication().node().nodeId();
        for (final String id : new ArrayList<>(cluster.nodes().keySet()))
        {
            if (!id.equals(survivor))
            {
                cluster.nodes().remove(id).close();
            }
        }
        // The old leader hears from nobody: within its step-down time it must stop deciding.
        Await.until("the isolated leader to stop deciding", Duration.ofSeconds(10),
            () -> !leader.replication().canDecide());
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + cluster.peers().get(survivor).getPort())
            .deadline(Duration.ofMillis(500)).build())
        {
            final long start = System.nanoTime();
            final Decision answer = client.acquireBlocking(Descriptor.of("t", "/v1/orders/1"), 1);
            assertTrue(answer.degraded(), "a minority never decides: the SDK decided on its own (fail-open): " + answer);
            assertTrue(System.nanoTime() - start < 2_000_000_000L, "and the caller is not held past its deadline");
        }
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + cluster.peers().get(survivor).getPort())
            .deadline(Duration.ofMillis(500)).localFallback(false).build())
        {
            assertThrows(LimiterException.class, () -> client.acquireBlocking(Descriptor.of("t", "/v1/orders/1"), 1),
                "without local decisions the call fails rather than wait");
        }
        // time in which the lone member must not start deciding
        Thread.sleep(1000);
        assertFalse(leader.replication().canDecide(), "still not deciding alone");
    }

    private static final String MEMBERS_TOKEN = "cluster-test-admin-token-0123456789";

    /** A membership change through a node's admin API; returns "STATUS:body". */
    private static String members(final StoreServer node, final String method, final String id, final String body) throws Exception
    {
        final java.net.http.HttpResponse<String> answer = AdminCalls.call(java.net.http.HttpClient.newHttpClient(), node.adminPort(),
            method, "/v1/members/" + id + "?reason=test", body, MEMBERS_TOKEN);
        return answer.statusCode() + ":" + answer.body();
    }

    @Test
    void aMemberAddedAtRunTimeCatchesUpAndARemovedOneStopsTakingPart() throws Exception
    {
        cluster.startAll(2, MEMBERS_TOKEN);
        final StoreServer leader = cluster.leader();
        try (LimiterClient client = cluster.client())
        {
            for (int i = 0; i < 300; i++)
            {
                client.acquireBlocking(Descriptor.of("tenant-" + i, "/v1/orders/1"), 1);
            }
        }
        int port;
        do
        {
            port = ClusterPorts.randomBase(1 + LocalCluster.RAFT_OFFSET);
        }
        while (!ClusterPorts.bindable(port) || !ClusterPorts.bindable(port + LocalCluster.RAFT_OFFSET));
        final Map<String, InetSocketAddress> four = new LinkedHashMap<>(cluster.peers());
        four.put("n4", new InetSocketAddress("127.0.0.1", port));
        java.nio.file.Files.createDirectories(cluster.dir().resolve("n4-config"));
        final ServerConfig config = TestNode.config(cluster.dir().resolve("n4-config"), port, 2).adminPort(-1).nodeId("n4").peers(four)
            .raftPortOffset(LocalCluster.RAFT_OFFSET).dataDir(cluster.dir().resolve("n4")).joining(true);
        cluster.nodes().put("n4", new StoreServer(config).start());
        Thread.sleep(1000); // long enough that a campaigning newcomer would have been told to shut down

        final String follower = cluster.peers().keySet().stream().filter(id -> cluster.nodes().get(id) != leader).findFirst().orElseThrow();
        final String n4 = "{\"address\":\"127.0.0.1:" + port + "\"}";
        final String added = members(cluster.nodes().get(follower), "PUT", "n4", n4);
        assertTrue(added.startsWith("421:"), "a follower refuses membership changes: " + added);
        final String result = members(leader, "PUT", "n4", n4);
        assertTrue(result.startsWith("200:") && result.contains("\"id\": \"n4\"") && result.contains("127.0.0.1:" + port), result);
        final long decisions = leader.replication().buckets().appliedDecisions();
        Await.until("the new member to catch up", Duration.ofSeconds(30),
            () -> cluster.nodes().get("n4").replication().buckets().appliedDecisions() >= decisions && cluster.converged());

        final String removed = members(leader, "DELETE", follower, null);
        assertTrue(removed.startsWith("200:") && !removed.contains("\"" + follower + "\""), removed);
        assertTrue(leader.policyState().audit(r -> r.getAction().equals("MEMBERS_CHANGE"), 10).size() == 2,
            "both changes are in the audit log");
        // As an operator would: stop the removed member (left running it would campaign on its own).
        final StoreServer removedNode = cluster.nodes().remove(follower);
        final long removedApplied = removedNode.replication().buckets().appliedDecisions();
        removedNode.close();
        try (LimiterClient client = cluster.client())
        {
            for (int i = 0; i < 50; i++)
            {
                client.acquireBlocking(Descriptor.of("later-" + i, "/v1/orders/1"), 1);
            }
        }
        Await.until("the remaining members to converge on the later decisions", Duration.ofSeconds(30), () ->
            cluster.nodes().get("n4").replication().buckets().appliedDecisions() >= removedApplied + 50 && cluster.converged());
    }

    @Test
    void aMemberWithADifferentPolicyFileAdoptsTheReplicatedPoliciesInsteadOfDiverging() throws Exception
    {
        cluster.choosePorts();
        for (final String id : cluster.peers().keySet())
        {
            final Path configDir = cluster.dir().resolve(id + "-config");
            java.nio.file.Files.createDirectories(configDir);
            final ServerConfig config = TestNode.config(configDir, cluster.peers().get(id).getPort(), 2)
                .adminPort(-1).nodeId(id).peers(cluster.peers()).raftPortOffset(LocalCluster.RAFT_OFFSET).dataDir(cluster.dir().resolve(id));
            if (id.equals("n3"))
            {
                // Same policies but one rate changed: only the first leader's file seeds the cluster.
                java.nio.file.Files.writeString(configDir.resolve("policies.json"), TestNode.POLICIES.replace("\"rate\":10,", "\"rate\":11,"));
            }
            cluster.nodes().put(id, new StoreServer(config).start());
        }
        final StoreServer leader = cluster.leader();
        try (LimiterClient client = cluster.client())
        {
            for (int i = 0; i < 20; i++)
            {
                client.acquireBlocking(Descriptor.of("tenant-" + i, "/v1/orders/1"), 1);
            }
        }
        Await.until("every member to apply the decisions and converge", Duration.ofSeconds(20), () ->
            cluster.nodes().values().stream().allMatch(n -> n.replication().buckets().appliedDecisions() >= 20) && cluster.converged());
        for (final StoreServer node : cluster.nodes().values())
        {
            assertEquals(leader.policies().fingerprint(), node.policies().fingerprint(), "every member decides with the replicated set");
            assertEquals(1, node.policyState().audit(r -> r.getAction().equals("POLICIES_BOOTSTRAPPED"), 10).size(),
                "exactly one seed was applied");
        }
    }
}
