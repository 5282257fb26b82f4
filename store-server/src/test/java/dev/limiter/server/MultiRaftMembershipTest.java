package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.MultiRaftCluster;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.limiter.server.testing.MultiRaftCluster.NO_REFILL;
import static dev.limiter.server.testing.MultiRaftCluster.NO_REFILL_STRICT;
import static dev.limiter.server.testing.MultiRaftCluster.RAFT_OFFSET;
import static dev.limiter.server.testing.MultiRaftCluster.SHARDS;
import static dev.limiter.server.testing.MultiRaftCluster.TOKEN;
import static dev.limiter.server.testing.MultiRaftCluster.tenantOn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Members of a cluster of three groups (a {@link MultiRaftCluster}) away, restarted, added and removed: every group
 * catches up (by snapshots past a purged log), recovers its buckets, and takes in or lets go of the member.
 */
@Timeout(180)
class MultiRaftMembershipTest
{
    /** A new cluster for each test, in a directory of its own; stopped after the test. */
    @RegisterExtension
    final MultiRaftCluster cluster = new MultiRaftCluster();

    @Test
    void aMemberAwayWhileEveryGroupCompactsItsLogCatchesUpBySnapshotsAndConverges() throws Exception
    {
        cluster.compactEagerly(true);
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        cluster.putOrders(NO_REFILL_STRICT, 5); // STRICT: one log entry per call (FAST calls would share entries)
        final long[] n3Had = new long[3];
        for (int g = 0; g < 3; g++)
        {
            n3Had[g] = cluster.nodes().get("n3").replicationGroups().all().get(g).member().lastAppliedIndex();
        }
        cluster.nodes().remove("n3").close();
        Await.until("group 2 to be decided by n1 or n2", Duration.ofSeconds(10), () -> cluster.decider(2) != null);
        // One entry per decision: 180 per group, well past 20 entries and
        // several 4 KiB segments, so every group snapshots and purges what n3 would have replayed.
        for (int shard = 0; shard < SHARDS; shard++)
        {
            for (int t = 0; t < 60; t++)
            {
                final String tenant = tenantOn(shard, t);
                for (int i = 0; i < 3; i++)
                {
                    assertTrue(cluster.decide(tenant).allowed(), tenant + " call " + i);
                }
            }
        }
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            final String leader = cluster.decider(g);
            assertNotNull(leader, "group " + g + " has a decider");
            // A snapshot of what the group applied lies far past what n3 holds, and the log before it is purged.
            final long snapshotIndex = cluster.nodes().get(leader).replicationGroups().all().get(group).member().snapshot().get(10, TimeUnit.SECONDS);
            assertTrue(snapshotIndex > n3Had[group] + 100, "group " + group + ": snapshot at " + snapshotIndex + ", n3 had " + n3Had[group]);
        }
        final StoreServer back = cluster.start("n3");
        Await.until(() -> "n3 to install a snapshot in every group: " + java.util.stream.IntStream.range(0, 3)
                .mapToObj(g -> String.valueOf(back.replicationGroups().all().get(g).member().snapshotsInstalled())).toList(),
            Duration.ofSeconds(60), () -> java.util.stream.IntStream.range(0, 3)
                .allMatch(g -> back.replicationGroups().all().get(g).member().snapshotsInstalled() > 0));
        Await.until("every group to converge on every replica, n3 included", Duration.ofSeconds(30),
            () -> cluster.converged() && cluster.appliedIn("n3", 0) == 180 && cluster.appliedIn("n3", 1) == 180 && cluster.appliedIn("n3", 2) == 180);
        // What n3 holds came from the snapshots: each tenant has spent 3 of its 5 tokens there too.
        cluster.awaitSpreadLeaders();
        final String tenant = tenantOn(2, 0);
        assertTrue(cluster.decide(tenant).allowed(), "the fourth of five, decided by n3 again");
        assertTrue(cluster.decide(tenant).allowed(), "the fifth of five");
        assertFalse(cluster.decide(tenant).allowed(), "the sixth: n3's tables came from the snapshot, not from nothing");
    }

    @Test
    void aWholeClusterRestartRecoversEveryGroupAndDrainedBucketsStayDrained() throws Exception
    {
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        cluster.putOrders(NO_REFILL, 5);
        for (int shard = 0; shard < SHARDS; shard++)
        {
            for (int i = 0; i < 5; i++)
            {
                assertTrue(cluster.decide(tenantOn(shard, 0)).allowed());
            }
        }
        Await.until("every group to converge", Duration.ofSeconds(20), () -> cluster.converged() && cluster.appliedIn("n3", 2) == 5);
        cluster.clients().values().forEach(LimiterClient::close);
        cluster.clients().clear();
        for (final String id : new ArrayList<>(cluster.nodes().keySet()))
        {
            cluster.nodes().remove(id).close();
        }
        for (final String id : cluster.peers().keySet())
        {
            cluster.start(id);
        }
        cluster.awaitSpreadLeaders();
        for (int shard = 0; shard < SHARDS; shard++)
        {
            final Decision after = cluster.decide(tenantOn(shard, 0));
            assertFalse(after.allowed(), "shard " + shard + "'s group recovered its drained bucket from disk: " + after);
        }
        Await.until("every group to converge after the restart", Duration.ofSeconds(20),
            () -> cluster.converged() && cluster.appliedIn("n1", 1) == 6);
    }

    @Test
    void aMemberAddedJoinsEveryGroupAndARemovedOneLeavesEveryGroup() throws Exception
    {
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        for (int shard = 0; shard < SHARDS; shard++)
        {
            for (int t = 0; t < 3; t++)
            {
                cluster.decide(tenantOn(shard, t));
            }
        }
        final int port = ClusterPorts.free(1, RAFT_OFFSET)[0];
        final Map<String, InetSocketAddress> four = new LinkedHashMap<>(cluster.peers());
        four.put("n4", new InetSocketAddress("127.0.0.1", port));
        Files.createDirectories(cluster.dir().resolve("n4-config"));
        cluster.nodes().put("n4", new StoreServer(TestNode.config(cluster.dir().resolve("n4-config"), port, SHARDS).adminPort(-1).nodeId("n4").peers(four)
            .raftPortOffset(RAFT_OFFSET).dataDir(cluster.dir().resolve("n4")).raftGroups(3).joining(true)).start());

        final HttpResponse<String> added = AdminCalls.call(HttpClient.newHttpClient(), cluster.nodes().get("n1").adminPort(), "PUT",
            "/v1/members/n4?reason=test", "{\"address\":\"127.0.0.1:" + port + "\"}", TOKEN);
        assertEquals(200, added.statusCode(), added.body());
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            Await.until("n4 to be a member of group " + g + " everywhere", Duration.ofSeconds(20), () ->
                cluster.nodes().values().stream().allMatch(n -> n.replicationGroups().all().get(group).members().containsKey("n4")));
        }
        Await.until("n4 to catch up in every group", Duration.ofSeconds(30), cluster::converged);

        final HttpResponse<String> removed = AdminCalls.call(HttpClient.newHttpClient(), cluster.nodes().get("n1").adminPort(), "DELETE",
            "/v1/members/n3?reason=test", null, TOKEN);
        assertEquals(200, removed.statusCode(), removed.body());
        cluster.nodes().remove("n3").close();
        cluster.clients().remove("n3");
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            Await.until(() -> "group " + group + " to drop n3 and have a leader: " + cluster.groupView(group),
                Duration.ofSeconds(30), () ->
                cluster.decider(group) != null &&
                cluster.nodes().values().stream().noneMatch(n -> n.replicationGroups().all().get(group).members().containsKey("n3")));
        }
        // Group 2, which n3 led, now prefers n4 (the members sorted: n1, n2, n4).
        Await.until("group 2's leadership to settle on n4", Duration.ofSeconds(30), () -> "n4".equals(cluster.decider(2)));
        cluster.peers().remove("n3");
        cluster.peers().put("n4", new InetSocketAddress("127.0.0.1", port));
        for (int shard = 0; shard < SHARDS; shard++)
        {
            assertFalse(cluster.decide(tenantOn(shard, 5)).degraded(), "shard " + shard + " is decided by a member");
        }
        Await.until("the members to converge", Duration.ofSeconds(30), cluster::converged);
    }
}
