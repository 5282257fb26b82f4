package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.status.GroupStatus;
import dev.limiter.protocol.status.ShardStatus;
import dev.limiter.protocol.status.StatusReport;
import dev.limiter.server.cluster.ReplicationGroups;
import dev.limiter.server.engine.FrameRouter;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClosingTogether;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.TestNode;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three real nodes, three shards, three Raft groups (--raft-groups 3): each node leads one group,
 * decides only that group's shard, sends callers of the others to their leaders, and every
 * group's tables converge on every replica, through a policy change and a leader's death and
 * return.
 */
@Timeout(180)
class MultiRaftTest
{
    private static final int RAFT_OFFSET = 100;
    private static final int SHARDS = 3;
    private static final String TOKEN = "multi-raft-token-0123456789";
    /** Five tokens an hour: nothing refills while a test runs, so every token is accounted for. */
    private static final String NO_REFILL = "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"period\":\"3600s\"," +
        "\"burst\":5,\"owner\":\"test\",\"reason\":\"no refill during the test\"}";
    /** The same, STRICT: a decision is answered only once committed, so no leader change can lose it. */
    private static final String NO_REFILL_STRICT = NO_REFILL.replace("\"owner\"", "\"consistency\":\"STRICT\",\"owner\"");

    @TempDir
    Path dir;

    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private final Map<String, StoreServer> nodes = new LinkedHashMap<>();
    private final Map<String, LimiterClient> clients = new LinkedHashMap<>();
    /** Snapshots every 20 entries and 4 KiB log segments, so the log is purged past an absent member. */
    private boolean compactEagerly;
    /** The member that writes the classic log layout while it leads (the others write the compact one), if any. */
    private String classicLogOn;

    @AfterEach
    void stopAll()
    {
        clients.values().forEach(LimiterClient::close);
        ClosingTogether.close(nodes.values());
    }

    private void choosePorts()
    {
        final int[] ports = ClusterPorts.free(3, RAFT_OFFSET);
        for (int i = 0; i < 3; i++)
        {
            peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", ports[i]));
        }
    }

    private StoreServer start(final String id) throws Exception
    {
        Files.createDirectories(dir.resolve(id + "-config"));
        final ServerConfig config = TestNode.config(dir.resolve(id + "-config"), peers.get(id).getPort(), SHARDS)
            .nodeId(id).peers(peers).raftPortOffset(RAFT_OFFSET).dataDir(dir.resolve(id)).raftGroups(3).adminToken(TOKEN);
        if (compactEagerly)
        {
            config.snapshotEveryEntries(20).logSegmentBytes(4096);
        }
        if (id.equals(classicLogOn))
        {
            config.logFormat(ClusterConfig.LogFormat.CLASSIC);
        }
        final StoreServer server = new StoreServer(config).start();
        nodes.put(id, server);
        return server;
    }

    private void startCluster() throws Exception
    {
        choosePorts();
        for (final String id : peers.keySet())
        {
            start(id);
        }
    }

    /** What each node says of group {@code g}: the leader it knows, the members, whether it decides. */
    private String groupView(final int g)
    {
        final StringBuilder view = new StringBuilder();
        nodes.forEach((id, n) ->
        {
            final dev.limiter.server.cluster.Replication group = n.replicationGroups().all().get(g);
            view.append(id).append(": leader ").append(group.leaderId()).append(", members ").append(group.members().keySet())
                .append(", decides ").append(group.canDecide()).append("; ");
        });
        return view.toString();
    }

    /** The node that decides for group {@code g} now, or null. */
    private String decider(final int g)
    {
        for (final Map.Entry<String, StoreServer> node : nodes.entrySet())
        {
            if (node.getValue().replicationGroups().all().get(g).canDecide())
            {
                return node.getKey();
            }
        }
        return null;
    }

    private void awaitSpreadLeaders() throws InterruptedException
    {
        // Each group prefers one member, round robin over the sorted ids: n1 leads 0, n2 leads 1, n3 leads 2.
        Await.until("each node to decide for the group it is preferred for", Duration.ofSeconds(30), () ->
            "n1".equals(decider(0)) && "n2".equals(decider(1)) && "n3".equals(decider(2)));
    }

    private static int shardOf(final String tenant)
    {
        final byte[] bytes = tenant.getBytes(StandardCharsets.UTF_8);
        return FrameRouter.tenantShard(new UnsafeBuffer(bytes), 0, bytes.length, SHARDS);
    }

    /** A tenant whose buckets live on {@code shard} (shard s is group s's, with three of each). */
    private static String tenantOn(final int shard, final int nth)
    {
        int found = 0;
        for (int i = 0; ; i++)
        {
            final String tenant = "tenant-" + i;
            if (shardOf(tenant) == shard && found++ == nth)
            {
                return tenant;
            }
        }
    }

    /** A client of one node only: what it gets is that node's answer (or a local decision, which tests reject). */
    private LimiterClient clientOf(final String id)
    {
        return clients.computeIfAbsent(id, n -> LimiterClient.builder().endpoints("127.0.0.1:" + peers.get(n).getPort())
            .connections(1).deadline(Duration.ofSeconds(3)).build());
    }

    private Decision decide(final String tenant) throws Exception
    {
        final String node = decider(ReplicationGroups.groupOf(shardOf(tenant), 3));
        final Decision decision = clientOf(node).acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
        assertFalse(decision.degraded(), "decided by node " + node + ": " + decision);
        return decision;
    }

    /** Every running node applied the same decisions in every group and holds equal tables. */
    private boolean converged()
    {
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            final long applied = nodes.values().iterator().next().replicationGroups().all().get(g).buckets().appliedDecisions();
            final long digest = nodes.values().iterator().next().replicationGroups().all().get(g).buckets().digest();
            if (!nodes.values().stream().map(n -> n.replicationGroups().all().get(group).buckets())
                .allMatch(b -> b.appliedDecisions() == applied && b.digest() == digest))
            {
                return false;
            }
        }
        return true;
    }

    private long appliedIn(final String node, final int g)
    {
        return nodes.get(node).replicationGroups().all().get(g).buckets().appliedDecisions();
    }

    /** Makes a new version of "orders" (through the control group's leader) and waits until every node has it in force. */
    private void putOrders(final String json, final long burst) throws Exception
    {
        Await.until("a node to lead the control group", Duration.ofSeconds(10), () -> decider(0) != null);
        final String controlLeader = decider(0);
        final HttpResponse<String> put = AdminCalls.call(HttpClient.newHttpClient(), nodes.get(controlLeader == null ? "n1" : controlLeader).adminPort(), "PUT",
            "/v1/policies/orders", json, TOKEN);
        assertEquals(200, put.statusCode(), put.body());
        Await.until("every node to have the new version in force", Duration.ofSeconds(10), () ->
            nodes.values().stream().allMatch(n -> n.policies().policies().stream()
                .anyMatch(p -> p.id().equals("orders") && p.version() == 2 && p.limit().burstTokens() == burst)));
    }

    @Test
    void eachNodeLeadsOneGroupDecidesItsShardAndEveryGroupConvergesOnEveryReplica() throws Exception
    {
        startCluster();
        awaitSpreadLeaders();
        putOrders(NO_REFILL, 5);
        for (int shard = 0; shard < SHARDS; shard++)
        {
            for (int t = 0; t < 4; t++)
            {
                final String tenant = tenantOn(shard, t);
                for (int i = 0; i < 6; i++)
                {
                    // Five tokens per tenant, none refilled: the sixth call is refused.
                    assertEquals(i < 5, decide(tenant).allowed(), tenant + " call " + i);
                }
            }
        }
        // Each group logs each of its tenants' decisions (refusals too), and only those.
        Await.until("every group to apply its 24 decisions and converge on every replica", Duration.ofSeconds(20), () ->
            appliedIn("n1", 0) == 24 && appliedIn("n1", 1) == 24 && appliedIn("n1", 2) == 24 && converged());

        // A node asked for a shard it does not lead names that shard's leader.
        final String tenant = tenantOn(1, 0);
        final RawConnection.Answer answer = RawConnection.exchange(peers.get("n1").getPort(), MessageType.ACQUIRE,
            RawConnection.acquireBody(AcquireCodec.encodeFields(tenant, "", "", "/v1/orders/1", "", "")));
        assertEquals(ErrorCode.NOT_LEADER, answer.errorCode());
        assertEquals("127.0.0.1:" + peers.get("n2").getPort(), answer.errorMessage());

        // Status names every group's leader and every shard's.
        final String json = RawConnection.exchange(peers.get("n3").getPort(), MessageType.STATUS, new byte[0]).text();
        final StatusReport status = StatusJson.parse(json);
        assertEquals(List.of("n1", "n2", "n3"), status.getGroupsList().stream().map(GroupStatus::getLeader).toList(),
            json);
        assertEquals(150, status.getElectionTimeoutMs(),
            "every member's election timeout, for ./limiter status to compare: " + json);
        assertEquals("LEADER", status.getGroups(2).getRole(), json);
        final ShardStatus shard1 = status.getShards(1);
        assertEquals(List.of("FOLLOWER", 1, "127.0.0.1:" + peers.get("n2").getPort()),
            List.of(shard1.getRole(), shard1.getGroup(), shard1.getLeaderAddress()), json);
    }

    @Test
    void aMemberAwayWhileEveryGroupCompactsItsLogCatchesUpBySnapshotsAndConverges() throws Exception
    {
        compactEagerly = true;
        startCluster();
        awaitSpreadLeaders();
        putOrders(NO_REFILL_STRICT, 5); // STRICT: one log entry per call (FAST calls would share entries)
        final long[] n3Had = new long[3];
        for (int g = 0; g < 3; g++)
        {
            n3Had[g] = nodes.get("n3").replicationGroups().all().get(g).member().lastAppliedIndex();
        }
        nodes.remove("n3").close();
        Await.until("group 2 to be decided by n1 or n2", Duration.ofSeconds(10), () -> decider(2) != null);
        // One entry per decision: 180 per group, well past 20 entries and
        // several 4 KiB segments, so every group snapshots and purges what n3 would have replayed.
        for (int shard = 0; shard < SHARDS; shard++)
        {
            for (int t = 0; t < 60; t++)
            {
                final String tenant = tenantOn(shard, t);
                for (int i = 0; i < 3; i++)
                {
                    assertTrue(decide(tenant).allowed(), tenant + " call " + i);
                }
            }
        }
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            final String leader = decider(g);
            assertNotNull(leader, "group " + g + " has a decider");
            // A snapshot of what the group applied lies far past what n3 holds, and the log before it is purged.
            final long snapshotIndex = nodes.get(leader).replicationGroups().all().get(group).member().snapshot().get(10, TimeUnit.SECONDS);
            assertTrue(snapshotIndex > n3Had[group] + 100, "group " + group + ": snapshot at " + snapshotIndex + ", n3 had " + n3Had[group]);
        }
        final StoreServer back = start("n3");
        Await.until(() -> "n3 to install a snapshot in every group: " + java.util.stream.IntStream.range(0, 3)
                .mapToObj(g -> String.valueOf(back.replicationGroups().all().get(g).member().snapshotsInstalled())).toList(),
            Duration.ofSeconds(60), () -> java.util.stream.IntStream.range(0, 3)
                .allMatch(g -> back.replicationGroups().all().get(g).member().snapshotsInstalled() > 0));
        Await.until("every group to converge on every replica, n3 included", Duration.ofSeconds(30),
            () -> converged() && appliedIn("n3", 0) == 180 && appliedIn("n3", 1) == 180 && appliedIn("n3", 2) == 180);
        // What n3 holds came from the snapshots: each tenant has spent 3 of its 5 tokens there too.
        awaitSpreadLeaders();
        final String tenant = tenantOn(2, 0);
        assertTrue(decide(tenant).allowed(), "the fourth of five, decided by n3 again");
        assertTrue(decide(tenant).allowed(), "the fifth of five");
        assertFalse(decide(tenant).allowed(), "the sixth: n3's tables came from the snapshot, not from nothing");
    }

    @Test
    void hierarchicalLimitsAreChargedAllOrNoneInTheGroupOfEachTenantAndARouteBudgetKeepsAShareInEachGroup() throws Exception
    {
        startCluster();
        awaitSpreadLeaders();
        putOrders(NO_REFILL, 5);
        final HttpResponse<String> put = AdminCalls.call(HttpClient.newHttpClient(), nodes.get("n1").adminPort(), "PUT",
            "/v1/policies/orders-user", "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"period\":\"3600s\",\"burst\":2," +
                "\"scope\":\"PRINCIPAL\",\"stacked\":true,\"owner\":\"platform\",\"reason\":\"per user\"}", TOKEN);
        assertEquals(200, put.statusCode(), put.body());
        // The API's capacity, split into one share of 6 per shard (so per group): decided by each group's leader alone.
        final HttpResponse<String> global = AdminCalls.call(HttpClient.newHttpClient(), nodes.get("n1").adminPort(), "PUT",
            "/v1/policies/orders-global", "{\"selector\":{\"route\":\"/v1/{resource}/{id}\"},\"rate\":1,\"period\":\"3600s\",\"burst\":" +
                6 * SHARDS + ",\"scope\":\"GLOBAL\",\"stacked\":true,\"owner\":\"platform\",\"reason\":\"route capacity\"}", TOKEN);
        assertEquals(200, global.statusCode(), global.body());
        Await.until("every node to have the stacked policies in force", Duration.ofSeconds(10), () ->
            nodes.values().stream().allMatch(n -> n.policies().policies().stream().filter(p -> p.id().startsWith("orders-")).count() == 2));
        for (int shard = 0; shard < SHARDS; shard++)
        {
            // In each tenant's group: a user's third call is refused by its allowance (2), and once the
            // tenant's five tokens are spent the tenant's policy refuses the next user's second call.
            final String tenant = tenantOn(shard, 0);
            final List<String> answers = new ArrayList<>();
            for (final String user : List.of("u1", "u2", "u3"))
            {
                for (int i = 0; i < 3; i++)
                {
                    final Decision decision = decideAs(tenant, user);
                    answers.add(user + ":" + (decision.allowed() ? "ok" : decision.policyId()));
                }
            }
            assertEquals(List.of("u1:ok", "u1:ok", "u1:orders-user", "u2:ok", "u2:ok", "u2:orders-user", "u3:ok", "u3:orders",
                "u3:orders"), answers, "shard " + shard);
            // Five of the shard's six route tokens are spent: another tenant of the shard gets the sixth, then the share refuses.
            final String neighbour = tenantOn(shard, 1);
            assertTrue(decideAs(neighbour, "u1").allowed(), "shard " + shard);
            final Decision spent = decideAs(neighbour, "u1");
            assertFalse(spent.allowed(), "shard " + shard);
            assertEquals("orders-global", spent.policyId(), "shard " + shard + ": " + spent);
            assertEquals(6, spent.limit(), "the answer shows the shard's share: " + spent);
        }
        // Every replica replays each section at its shard's share (ReplicatedBucketsTest checks the share a replica uses).
        Await.until("every group to converge on every replica", Duration.ofSeconds(20),
            () -> converged() && appliedIn("n1", 1) > 0);
    }

    private Decision decideAs(final String tenant, final String principal) throws Exception
    {
        final String node = decider(ReplicationGroups.groupOf(shardOf(tenant), 3));
        final Decision decision = clientOf(node).acquireBlocking(
            Descriptor.builder().tenant(tenant).principal(principal).route("/v1/orders/1").build(), 1);
        assertFalse(decision.degraded(), "decided by node " + node + ": " + decision);
        return decision;
    }

    @Test
    void aPolicyChangeInTheControlGroupGovernsDecisionsReplicatedInTheOtherGroups() throws Exception
    {
        startCluster();
        awaitSpreadLeaders();
        // The deciders of groups 1 and 2 apply the new version from the control group, then decide under it.
        putOrders("{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"burst\":2,\"owner\":\"test\",\"reason\":\"tighter\"}", 2);
        for (int shard = 1; shard < SHARDS; shard++)
        {
            final String tenant = tenantOn(shard, 0);
            assertTrue(decide(tenant).allowed());
            assertTrue(decide(tenant).allowed());
            final Decision third = decide(tenant);
            assertFalse(third.allowed(), "burst 2 under the new version: " + third);
            assertEquals(2, third.policyVersion(), third.toString());
        }
        Await.until("every group to converge on every replica", Duration.ofSeconds(20),
            () -> converged() && appliedIn("n1", 1) == 3);
    }

    @Test
    void aGroupLeadersDeathMovesOnlyItsGroupAndLeadershipReturnsWhenItIsBack() throws Exception
    {
        // n2 writes the classic log layout, as during an upgrade from a build before the compact one:
        // group 1's log then holds classic, compact (while n1 or n3 leads) and classic entries again,
        // which every member applies, and n2 reads back from its own disk when it restarts.
        classicLogOn = "n2";
        startCluster();
        awaitSpreadLeaders();
        // STRICT: FAST decisions answered but not yet logged may be dropped when the lead moves (the FAST bound).
        putOrders(NO_REFILL_STRICT, 5);
        final String tenant = tenantOn(1, 0);
        assertTrue(decide(tenant).allowed());
        assertTrue(decide(tenant).allowed());
        nodes.remove("n2").halt();
        Await.until("group 1 to be decided by another node", Duration.ofSeconds(10), () -> decider(1) != null);
        assertNotEquals("n2", decider(1));
        assertEquals("n1", decider(0), "the other groups keep their leaders");
        assertEquals("n3", decider(2), "the other groups keep their leaders");
        assertTrue(decide(tenant).allowed(), "the third of five");
        start("n2");
        Await.until("group 1's leadership to return to n2", Duration.ofSeconds(30), () -> "n2".equals(decider(1)));
        clients.remove("n2").close(); // a client of the dead process only: a new one connects to the new
        assertTrue(decide(tenant).allowed(), "the fourth of five");
        assertTrue(decide(tenant).allowed(), "the fifth of five");
        assertFalse(decide(tenant).allowed(), "nothing was forgotten across two leader changes");
        Await.until("every group to converge on every replica", Duration.ofSeconds(20),
            () -> converged() && appliedIn("n2", 1) == 6);
    }

    @Test
    void aPlannedHandOverUnderFastLoadDropsNoDecisionAndGoesToAMemberReadyToDecide() throws Exception
    {
        // As in a rolling restart: n2 stops, n1 or n3 takes group 1 (n2's preferred group) and, once
        // n2 is back and caught up, hands the lead back to it on purpose, while FAST calls of a
        // group-1 tenant keep 64 in flight.
        startCluster();
        awaitSpreadLeaders();
        putOrders(NO_REFILL.replace("\"burst\":5", "\"burst\":1000000"), 1_000_000);
        final String endpoints = String.join(",", peers.values().stream().map(a -> "127.0.0.1:" + a.getPort()).toList());
        final String tenant = tenantOn(1, 0);
        final AtomicLong byNodes = new AtomicLong();
        final AtomicLong local = new AtomicLong();
        final List<String> handOvers = new ArrayList<>();
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofSeconds(3)).build())
        {
            // Handed the lead before it had applied what the other groups brought it, n2 led for 0.3-1.5 s
            // without deciding (measured before it waited for a returning member, docs/cluster.md): that
            // happened on every hand-over. A host that starves the whole test for a second does not: so a
            // second hand-over is measured when the first overran its bound, and one of the two must meet it.
            for (int attempt = 1; ; attempt++)
            {
                nodes.remove("n2").close();
                Await.until("group 1 to be decided by n1 or n3", Duration.ofSeconds(30), () -> decider(1) != null);
                final String interim = decider(1);
                final long droppedBefore = nodes.get(interim).metrics().decisionsDroppedSoFar();
                final HandOver handOver = handBackUnderLoad(client, tenant, interim, byNodes, local);
                handOvers.add(handOver.toString());
                System.out.println("planned hand-over " + attempt + ": " + handOver + "; " + byNodes.get() + " decided by nodes, " +
                    local.get() + " locally so far");
                assertEquals(droppedBefore, nodes.get(interim).metrics().decisionsDroppedSoFar(),
                    "every decision " + interim + " answered before it handed over reached the log");
                assertEquals(0, local.get(), "every call was decided by a node");
                if (handOver.withinBound())
                {
                    break;
                }
                assertTrue(attempt < 2, "callers waited longer than 1 s (plus this JVM's own longest stall) for a node's answer " +
                    "while the lead moved, in both hand-overs: " + handOvers);
            }
        }
        // n2's last FAST batch may still be on its way to the log when the load stops.
        Await.until(() -> "every decision a node answered to reach group 1's log: " + appliedIn("n2", 1) + " of " + byNodes.get(),
            Duration.ofSeconds(20), () -> appliedIn("n2", 1) >= byNodes.get() && converged());
        assertEquals(byNodes.get(), appliedIn("n2", 1), "every decision a node answered is in group 1's log, once");
    }

    @Test
    void aPlannedStopOfALeaderUnderFastLoadHandsItsLeadOverAndDropsNoAnsweredDecision() throws Exception
    {
        // A rolling restart stops each node in turn: FAST decisions the stopping leader answered but
        // had not logged yet must reach the log before the lead moves (a crash may lose them: halt()).
        startCluster();
        awaitSpreadLeaders();
        putOrders(NO_REFILL.replace("\"burst\":5", "\"burst\":1000000"), 1_000_000);
        final String endpoints = String.join(",", peers.values().stream().map(a -> "127.0.0.1:" + a.getPort()).toList());
        final String tenant = tenantOn(1, 0);
        final AtomicLong byNodes = new AtomicLong();
        final AtomicLong local = new AtomicLong();
        final StoreServer stopping = nodes.get("n2");
        final long droppedBefore = stopping.metrics().decisionsDroppedSoFar();
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofSeconds(3)).build())
        {
            final FastLoad load = new FastLoad(client, tenant, byNodes, local);
            try
            {
                Await.until("the load to be decided by n2", Duration.ofSeconds(10), () -> byNodes.get() > 2_000);
                final long stopStart = System.nanoTime();
                nodes.remove("n2").close();
                Await.until("group 1 to be decided by n1 or n3", Duration.ofSeconds(10), () -> decider(1) != null);
                System.out.println("planned stop of n2: group 1 decided again after " +
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopStart) + " ms");
                final long moved = byNodes.get();
                Await.until("the new leader to decide the load", Duration.ofSeconds(10), () -> byNodes.get() > moved + 2_000);
            }
            finally
            {
                load.stop();
            }
            load.assertEveryCallAnswered();
        }
        assertEquals(0, local.get(), "every call was decided by a node");
        assertEquals(droppedBefore, stopping.metrics().decisionsDroppedSoFar(), "n2 dropped nothing it answered");
        // The new leader's last FAST batch may still be on its way to the log when the load stops.
        Await.until(() -> "every decision a node answered to reach group 1's log: " + appliedIn("n1", 1) + " of " + byNodes.get(),
            Duration.ofSeconds(20), () -> appliedIn("n1", 1) >= byNodes.get() && converged());
        assertEquals(byNodes.get(), appliedIn("n1", 1), "every decision a node answered is in group 1's log, once");
    }

    /**
     * FAST calls of one tenant from a thread of their own, 64 in flight: counts those nodes decided
     * and those the SDK decided itself, and the longest wait between two answers from nodes.
     */
    private static final class FastLoad
    {
        final AtomicLong longestGapNanos = new AtomicLong();
        private final AtomicLong lastAnswerNanos = new AtomicLong(System.nanoTime());
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Semaphore inFlight = new Semaphore(64);
        private final Thread thread;

        FastLoad(final LimiterClient client, final String tenant, final AtomicLong byNodes, final AtomicLong local)
        {
            thread = new Thread(() ->
            {
                while (running.get())
                {
                    inFlight.acquireUninterruptibly();
                    client.acquire(Descriptor.of(tenant, "/v1/orders/1"), 1).whenComplete((decision, failure) ->
                    {
                        if (failure == null && !decision.degraded())
                        {
                            byNodes.incrementAndGet();
                            final long now = System.nanoTime();
                            longestGapNanos.accumulateAndGet(now - lastAnswerNanos.getAndSet(now), Math::max);
                        }
                        else
                        {
                            local.incrementAndGet();
                        }
                        inFlight.release();
                    });
                }
            }, "load");
            thread.start();
        }

        /** Issues no more calls. */
        void stop() throws InterruptedException
        {
            running.set(false);
            thread.join(5000);
        }

        void assertEveryCallAnswered() throws InterruptedException
        {
            assertTrue(inFlight.tryAcquire(64, 10, TimeUnit.SECONDS), "every call answered");
        }
    }

    /** One hand-over: the longest wait between two answers from nodes, and the longest stall of this JVM meanwhile. */
    private record HandOver(String from, long longestGapMillis, long longestStallMillis)
    {
        /** The bound is the hand-over's: a stall of the whole JVM (seen by a thread that only sleeps 1 ms) is added to it. */
        boolean withinBound()
        {
            return longestGapMillis < 1000 + longestStallMillis;
        }

        @Override
        public String toString()
        {
            return "from " + from + ", longest gap between node answers " + longestGapMillis + " ms, longest stall of this JVM's threads " +
                longestStallMillis + " ms";
        }
    }

    /** Load on {@code tenant} (64 calls in flight) decided by {@code interim}, while n2 starts and takes group 1 back. */
    private HandOver handBackUnderLoad(final LimiterClient client, final String tenant, final String interim, final AtomicLong byNodes,
        final AtomicLong local) throws Exception
    {
        final AtomicLong longestStallNanos = new AtomicLong();
        final AtomicBoolean watching = new AtomicBoolean(true);
        final FastLoad load = new FastLoad(client, tenant, byNodes, local);
        // How long this JVM's threads went without a CPU meanwhile (GC, or a host busy with other
        // work): callers wait that long whatever the nodes do, so it is not the hand-over's.
        final Thread stallWatch = new Thread(() ->
        {
            long last = System.nanoTime();
            while (watching.get())
            {
                LockSupport.parkNanos(1_000_000);
                final long now = System.nanoTime();
                longestStallNanos.accumulateAndGet(now - last - 1_000_000, Math::max);
                last = now;
            }
        }, "stall-watch");
        stallWatch.setDaemon(true);
        stallWatch.start();
        try
        {
            final long before = byNodes.get();
            Await.until("the load to be decided by " + interim, Duration.ofSeconds(10),
                () -> byNodes.get() > before + 2_000);
            load.longestGapNanos.set(0);
            longestStallNanos.set(0);
            start("n2");
            Await.until(() -> "group 1's lead to move to n2: " + groupView(1), Duration.ofSeconds(30),
                () -> "n2".equals(decider(1)));
            final long moved = byNodes.get();
            Await.until("n2 to decide the load", Duration.ofSeconds(10), () -> byNodes.get() > moved + 2_000);
        }
        finally
        {
            watching.set(false);
            load.stop();
        }
        load.assertEveryCallAnswered();
        return new HandOver(interim, load.longestGapNanos.get() / 1_000_000, longestStallNanos.get() / 1_000_000);
    }

    private long nodeRedirects()
    {
        return nodes.values().stream().mapToLong(n -> n.metrics().redirects()).sum();
    }

    @Test
    void aClientOfEveryNodeSendsEachTenantStraightToItsShardsLeaderAndFollowsAFailover() throws Exception
    {
        startCluster();
        awaitSpreadLeaders();
        putOrders(NO_REFILL, 5);
        final String endpoints = String.join(",", peers.values().stream().map(a -> "127.0.0.1:" + a.getPort()).toList());
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofSeconds(3)).build())
        {
            // Until the client has the shard map a call may be sent to a node that does not lead its shard.
            Await.until("a round of calls that no node redirects", Duration.ofSeconds(10), () ->
            {
                final long before = client.stats().redirects();
                for (int shard = 0; shard < SHARDS; shard++)
                {
                    client.acquireBlocking(Descriptor.of(tenantOn(shard, 9), "/v1/orders/1"), 1);
                }
                return client.stats().redirects() == before;
            });
            final long clientRedirects = client.stats().redirects();
            final long redirects = nodeRedirects();
            int allowed = 0;
            for (int t = 0; t < 30; t++)
            {
                final String tenant = "steady-" + t;
                for (int i = 0; i < 6; i++)
                {
                    final Decision decision = client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
                    assertFalse(decision.degraded(), "decided by a node: " + decision);
                    allowed += decision.allowed() ? 1 : 0;
                }
            }
            assertEquals(30 * 5, allowed, "five tokens per tenant, whichever node decided it");
            assertEquals(clientRedirects, client.stats().redirects(), "in steady state no call is sent back");
            assertEquals(redirects, nodeRedirects(), "in steady state no node bounces a frame");

            // Group 1's leader dies: its tenants are decided by the new leader, within their deadlines.
            final String tenant = tenantOn(1, 3);
            nodes.remove("n2").halt();
            Await.until("group 1 to be decided by another node", Duration.ofSeconds(10), () -> decider(1) != null);
            for (int i = 0; i < 5; i++)
            {
                final Decision decision = client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
                assertFalse(decision.degraded(), "decided by the new leader: " + decision);
                assertTrue(decision.allowed(), "call " + i + ": " + decision);
            }
            final Decision sixth = client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
            assertFalse(sixth.degraded() || sixth.allowed(), "the sixth call is refused by a node: " + sixth);
        }
    }

    @Test
    void globalAndPerAddressCallsGoToTheirShardsLeaderAndShadowsLedElsewhereNeverRefuseACall() throws Exception
    {
        startCluster();
        awaitSpreadLeaders();
        // A GLOBAL shadow of "orders": its one bucket lives on one shard, so most calls' frames reach
        // nodes that do not lead it; there it is skipped (counted), never a reason to refuse the call.
        final HttpResponse<String> shadow = AdminCalls.call(HttpClient.newHttpClient(), nodes.get("n1").adminPort(), "PUT",
            "/v1/policies/orders", "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1000,\"burst\":1000,\"scope\":\"GLOBAL\"," +
                "\"owner\":\"test\",\"reason\":\"try one budget for all\",\"mode\":\"SHADOW\"}", TOKEN);
        assertEquals(200, shadow.statusCode(), shadow.body());
        final String endpoints = String.join(",", peers.values().stream().map(a -> "127.0.0.1:" + a.getPort()).toList());
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofSeconds(3)).build())
        {
            final Descriptor[] calls = new Descriptor[40];
            for (int i = 0; i < calls.length; i++)
            {
                calls[i] = switch (i % 4)
                {
                    case 0 -> Descriptor.of("mixed-" + i, "/v1/orders/1");
                    case 1 -> Descriptor.of("mixed-" + i, "/hot"); // GLOBAL: one bucket, one shard, whoever the tenant
                    case 2 -> Descriptor.builder().tenant("mixed-" + i).route("/ip").clientIp("10.0.0." + i).build(); // CLIENT_IP
                    default -> Descriptor.of("mixed-" + i, "/fast"); // another GLOBAL policy, maybe another shard
                };
            }
            // Until the client holds a map with the ordinals of the set it holds, some calls go astray.
            Await.until("a round of calls that no node redirects", Duration.ofSeconds(15), () ->
            {
                final long before = client.stats().redirects();
                for (final Descriptor call : calls)
                {
                    client.acquireBlocking(call, 1);
                }
                return client.stats().redirects() == before;
            });
            final long clientRedirects = client.stats().redirects();
            final long redirects = nodeRedirects();
            for (int round = 0; round < 3; round++)
            {
                for (final Descriptor call : calls)
                {
                    final Decision decision = client.acquireBlocking(call, 1);
                    assertFalse(decision.degraded(), "decided by a node: " + call + " " + decision);
                }
            }
            assertEquals(clientRedirects, client.stats().redirects(), "no call is sent back, whatever its policy's scope");
            assertEquals(redirects, nodeRedirects(), "no node bounces a frame");
        }
        final double skipped = nodes.values().stream()
            .mapToDouble(n -> n.metrics().registry().find("limiter.shadow.skipped").counter().count()).sum();
        assertTrue(skipped > 0, "shadow evaluations on shards led elsewhere are skipped and counted");
    }

    @Test
    void aWholeClusterRestartRecoversEveryGroupAndDrainedBucketsStayDrained() throws Exception
    {
        startCluster();
        awaitSpreadLeaders();
        putOrders(NO_REFILL, 5);
        for (int shard = 0; shard < SHARDS; shard++)
        {
            for (int i = 0; i < 5; i++)
            {
                assertTrue(decide(tenantOn(shard, 0)).allowed());
            }
        }
        Await.until("every group to converge", Duration.ofSeconds(20), () -> converged() && appliedIn("n3", 2) == 5);
        clients.values().forEach(LimiterClient::close);
        clients.clear();
        for (final String id : new ArrayList<>(nodes.keySet()))
        {
            nodes.remove(id).close();
        }
        for (final String id : peers.keySet())
        {
            start(id);
        }
        awaitSpreadLeaders();
        for (int shard = 0; shard < SHARDS; shard++)
        {
            final Decision after = decide(tenantOn(shard, 0));
            assertFalse(after.allowed(), "shard " + shard + "'s group recovered its drained bucket from disk: " + after);
        }
        Await.until("every group to converge after the restart", Duration.ofSeconds(20),
            () -> converged() && appliedIn("n1", 1) == 6);
    }

    @Test
    void aMemberAddedJoinsEveryGroupAndARemovedOneLeavesEveryGroup() throws Exception
    {
        startCluster();
        awaitSpreadLeaders();
        for (int shard = 0; shard < SHARDS; shard++)
        {
            for (int t = 0; t < 3; t++)
            {
                decide(tenantOn(shard, t));
            }
        }
        final int port = ClusterPorts.free(1, RAFT_OFFSET)[0];
        final Map<String, InetSocketAddress> four = new LinkedHashMap<>(peers);
        four.put("n4", new InetSocketAddress("127.0.0.1", port));
        Files.createDirectories(dir.resolve("n4-config"));
        nodes.put("n4", new StoreServer(TestNode.config(dir.resolve("n4-config"), port, SHARDS).adminPort(-1).nodeId("n4").peers(four)
            .raftPortOffset(RAFT_OFFSET).dataDir(dir.resolve("n4")).raftGroups(3).joining(true)).start());

        final HttpResponse<String> added = AdminCalls.call(HttpClient.newHttpClient(), nodes.get("n1").adminPort(), "PUT",
            "/v1/members/n4?reason=test", "{\"address\":\"127.0.0.1:" + port + "\"}", TOKEN);
        assertEquals(200, added.statusCode(), added.body());
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            Await.until("n4 to be a member of group " + g + " everywhere", Duration.ofSeconds(20), () ->
                nodes.values().stream().allMatch(n -> n.replicationGroups().all().get(group).members().containsKey("n4")));
        }
        Await.until("n4 to catch up in every group", Duration.ofSeconds(30), this::converged);

        final HttpResponse<String> removed = AdminCalls.call(HttpClient.newHttpClient(), nodes.get("n1").adminPort(), "DELETE",
            "/v1/members/n3?reason=test", null, TOKEN);
        assertEquals(200, removed.statusCode(), removed.body());
        nodes.remove("n3").close();
        clients.remove("n3");
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            Await.until(() -> "group " + group + " to drop n3 and have a leader: " + groupView(group),
                Duration.ofSeconds(30), () ->
                decider(group) != null &&
                nodes.values().stream().noneMatch(n -> n.replicationGroups().all().get(group).members().containsKey("n3")));
        }
        // Group 2, which n3 led, now prefers n4 (the members sorted: n1, n2, n4).
        Await.until("group 2's leadership to settle on n4", Duration.ofSeconds(30), () -> "n4".equals(decider(2)));
        peers.remove("n3");
        peers.put("n4", new InetSocketAddress("127.0.0.1", port));
        for (int shard = 0; shard < SHARDS; shard++)
        {
            assertFalse(decide(tenantOn(shard, 5)).degraded(), "shard " + shard + " is decided by a member");
        }
        Await.until("the members to converge", Duration.ofSeconds(30), this::converged);
    }
}
