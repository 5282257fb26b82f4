package dev.limiter.server.testing;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.ClusterConfig;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.cluster.ReplicationGroups;
import dev.limiter.server.engine.FrameRouter;
import org.agrona.concurrent.UnsafeBuffer;

import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Three nodes n1..n3 in this JVM on loopback, each with {@link #SHARDS} shards in three Raft groups (shard g
 * is group g's; group 0 also holds the control log), the admin API on with {@link #TOKEN}. A test starts the
 * members it needs; after it (registered on its instance field: {@link PerTestDirectory}) {@link #close()}
 * closes the clients it made and stops the members running.
 */
public final class MultiRaftCluster extends PerTestDirectory
{
    public static final int RAFT_OFFSET = 100;
    public static final int SHARDS = 3;
    public static final String TOKEN = "multi-raft-token-0123456789";
    /** Five tokens an hour: nothing refills while a test runs, so every token is accounted for. */
    public static final String NO_REFILL = "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1," +
        "\"period\":\"3600s\",\"burst\":5,\"owner\":\"test\",\"reason\":\"no refill during the test\"}";
    /** The same, STRICT: a decision is answered only once committed, so no leader change can lose it. */
    public static final String NO_REFILL_STRICT = NO_REFILL.replace("\"owner\"",
        "\"consistency\":\"STRICT\",\"owner\"");

    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private final Map<String, StoreServer> nodes = new LinkedHashMap<>();
    private final Map<String, LimiterClient> clients = new LinkedHashMap<>();
    /** Snapshots every 20 entries and 4 KiB log segments, so the log is purged past an absent member. */
    private boolean compactEagerly;
    /** The member that writes the classic log layout while it leads (the others write the compact one), if any. */
    private String classicLogOn;

    /** The members' data addresses by id, once {@link #choosePorts()} has run. */
    public Map<String, InetSocketAddress> peers()
    {
        return peers;
    }

    /** The running members by id: a test that stops one removes it, one that starts another adds it. */
    public Map<String, StoreServer> nodes()
    {
        return nodes;
    }

    /** The clients {@link #clientOf} made, by the member each speaks to. */
    public Map<String, LimiterClient> clients()
    {
        return clients;
    }

    /** Members started from now on snapshot every 20 entries in 4 KiB log segments. */
    public void compactEagerly(final boolean eagerly)
    {
        compactEagerly = eagerly;
    }

    /** Member {@code id}, when started from now on, writes the classic log layout while it leads. */
    public void classicLogOn(final String id)
    {
        classicLogOn = id;
    }

    public void choosePorts()
    {
        final int[] ports = ClusterPorts.free(3, RAFT_OFFSET);
        for (int i = 0; i < 3; i++)
        {
            peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", ports[i]));
        }
    }

    public StoreServer start(final String id) throws Exception
    {
        Files.createDirectories(dir().resolve(id + "-config"));
        final ServerConfig config = TestNode.config(dir().resolve(id + "-config"), peers.get(id).getPort(), SHARDS)
            .nodeId(id).peers(peers).raftPortOffset(RAFT_OFFSET).dataDir(dir().resolve(id)).raftGroups(3)
            .adminToken(TOKEN);
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

    /** Every member, on new ports. */
    public void startAll() throws Exception
    {
        choosePorts();
        for (final String id : peers.keySet())
        {
            start(id);
        }
    }

    /** What each node says of group {@code g}: the leader it knows, the members, whether it decides. */
    public String groupView(final int g)
    {
        final StringBuilder view = new StringBuilder();
        nodes.forEach((id, n) ->
        {
            final Replication group = n.replicationGroups().all().get(g);
            view.append(id).append(": leader ").append(group.leaderId()).append(", members ")
                .append(group.members().keySet()).append(", decides ").append(group.canDecide()).append("; ");
        });
        return view.toString();
    }

    /** The node that decides for group {@code g} now, or null. */
    public String decider(final int g)
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

    /** Until each node decides for the group it is preferred for. */
    public void awaitSpreadLeaders() throws InterruptedException
    {
        // Each group prefers one member, round robin over the sorted ids: n1 leads 0, n2 leads 1, n3 leads 2.
        Await.until("each node to decide for the group it is preferred for", Duration.ofSeconds(30), () ->
            "n1".equals(decider(0)) && "n2".equals(decider(1)) && "n3".equals(decider(2)));
    }

    /** The shard of {@code tenant}'s buckets. */
    public static int shardOf(final String tenant)
    {
        final byte[] bytes = tenant.getBytes(StandardCharsets.UTF_8);
        return FrameRouter.tenantShard(new UnsafeBuffer(bytes), 0, bytes.length, SHARDS);
    }

    /** A tenant whose buckets live on {@code shard} (shard s is group s's, with three of each). */
    public static String tenantOn(final int shard, final int nth)
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
    public LimiterClient clientOf(final String id)
    {
        return clients.computeIfAbsent(id, n -> LimiterClient.builder().endpoints("127.0.0.1:" + peers.get(n).getPort())
            .connections(1).deadline(Duration.ofSeconds(3)).build());
    }

    /** One call for {@code tenant} on /v1/orders/1, asked of the node deciding its group; never a local decision. */
    public Decision decide(final String tenant) throws Exception
    {
        return decide(Descriptor.of(tenant, "/v1/orders/1"));
    }

    /** One call for {@code descriptor}, asked of the node deciding its tenant's group; never a local decision. */
    public Decision decide(final Descriptor descriptor) throws Exception
    {
        final String node = decider(ReplicationGroups.groupOf(shardOf(descriptor.tenant()), 3));
        final Decision decision = clientOf(node).acquireBlocking(descriptor, 1);
        assertFalse(decision.degraded(), "decided by node " + node + ": " + decision);
        return decision;
    }

    /** Every running node applied the same decisions in every group and holds equal tables. */
    public boolean converged()
    {
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            final StoreServer first = nodes.values().iterator().next();
            final long applied = first.replicationGroups().all().get(g).buckets().appliedDecisions();
            final long digest = first.replicationGroups().all().get(g).buckets().digest();
            if (!nodes.values().stream().map(n -> n.replicationGroups().all().get(group).buckets())
                .allMatch(b -> b.appliedDecisions() == applied && b.digest() == digest))
            {
                return false;
            }
        }
        return true;
    }

    /** The decisions {@code node} applied in group {@code g}. */
    public long appliedIn(final String node, final int g)
    {
        return nodes.get(node).replicationGroups().all().get(g).buckets().appliedDecisions();
    }

    /** Makes version 2 of "orders" (through the control group's leader) and waits until every node has it in force. */
    public void putOrders(final String json, final long burst) throws Exception
    {
        Await.until("a node to lead the control group", Duration.ofSeconds(10), () -> decider(0) != null);
        final String controlLeader = decider(0);
        final StoreServer control = nodes.get(controlLeader == null ? "n1" : controlLeader);
        final HttpResponse<String> put = AdminCalls.call(HttpClient.newHttpClient(), control.adminPort(), "PUT",
            "/v1/policies/orders", json, TOKEN);
        assertEquals(200, put.statusCode(), put.body());
        Await.until("every node to have the new version in force", Duration.ofSeconds(10), () ->
            nodes.values().stream().allMatch(n -> n.policies().policies().stream()
                .anyMatch(p -> p.id().equals("orders") && p.version() == 2 && p.limit().burstTokens() == burst)));
    }

    @Override
    public void close()
    {
        clients.values().forEach(LimiterClient::close);
        ClosingTogether.close(nodes.values());
    }
}
