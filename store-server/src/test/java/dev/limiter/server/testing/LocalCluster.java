package dev.limiter.server.testing;

import dev.limiter.client.LimiterClient;
import dev.limiter.server.ClusterConfig;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Three replicated nodes n1..n3 in this JVM on loopback, real Ratis, each member's storage and policy file
 * under the test's own directory. Registered on a test's instance field ({@link PerTestDirectory}); a test starts
 * the members it needs, and after it {@link #close()} stops those running.
 */
public final class LocalCluster extends PerTestDirectory
{
    /** Each member's Raft port is its data port plus this. */
    public static final int RAFT_OFFSET = 100;

    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private final Map<String, StoreServer> nodes = new LinkedHashMap<>();
    /** What each shard may hand its log uncommitted before it is behind (tests make it tiny). */
    private int maxUncommittedBytes = ClusterConfig.Defaults.MAX_UNCOMMITTED_BYTES_PER_SHARD;

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

    public void maxUncommittedBytes(final int bytes)
    {
        maxUncommittedBytes = bytes;
    }

    /** Picks three data ports whose Raft ports ({@link #RAFT_OFFSET} above) are free too. */
    public void choosePorts()
    {
        while (true)
        {
            final int base = ClusterPorts.randomBase(3 + RAFT_OFFSET);
            boolean free = true;
            for (int i = 0; i < 3 && free; i++)
            {
                free = ClusterPorts.bindable(base + i) && ClusterPorts.bindable(base + i + RAFT_OFFSET);
            }
            if (free)
            {
                for (int i = 0; i < 3; i++)
                {
                    peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", base + i));
                }
                return;
            }
        }
    }

    /** Member {@code id} with two shards and no admin port. */
    public StoreServer start(final String id) throws InterruptedException
    {
        return start(id, 2, null);
    }

    /** One member; with a token it serves the admin API on an ephemeral port, else none. */
    public StoreServer start(final String id, final int shards, final String adminToken) throws InterruptedException
    {
        final ServerConfig config = TestNode.config(dir().resolve(id + "-config"), peers.get(id).getPort(), shards)
            .nodeId(id).peers(peers).raftPortOffset(RAFT_OFFSET).dataDir(dir().resolve(id))
            .maxUncommittedBytesPerShard(maxUncommittedBytes);
        if (adminToken == null)
        {
            config.adminPort(-1);
        }
        else
        {
            config.adminToken(adminToken);
        }
        final StoreServer server = new StoreServer(config).start();
        nodes.put(id, server);
        return server;
    }

    /** Every member, two shards each, no admin port. */
    public void startAll() throws IOException, InterruptedException
    {
        startAll(2, null);
    }

    /** Every member on new ports, with {@code shards} shards each and the admin API when a token is given. */
    public void startAll(final int shards, final String adminToken) throws IOException, InterruptedException
    {
        choosePorts();
        for (final String id : peers.keySet())
        {
            Files.createDirectories(dir().resolve(id + "-config"));
            start(id, shards, adminToken);
        }
    }

    /** Every running node applied the same number of decisions and holds equal committed tables. */
    public boolean converged()
    {
        final long max = nodes.values().stream().mapToLong(n -> n.replication().buckets().appliedDecisions()).max()
            .orElse(0);
        if (!nodes.values().stream().allMatch(n -> n.replication().buckets().appliedDecisions() == max))
        {
            return false;
        }
        final long digest = nodes.values().iterator().next().replication().buckets().digest();
        return nodes.values().stream().allMatch(n -> n.replication().buckets().digest() == digest) &&
            nodes.values().stream().allMatch(n -> n.replication().buckets().appliedDecisions() == max);
    }

    /** The running member that can decide now, awaited for up to 20 s. */
    public StoreServer leader() throws InterruptedException
    {
        final StoreServer[] found = new StoreServer[1];
        Await.until("a ready leader", Duration.ofSeconds(20), () ->
        {
            for (final StoreServer node : nodes.values())
            {
                if (node.replication().canDecide())
                {
                    found[0] = node;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    /** A client of every member, one connection each, a deadline of 3 s. */
    public LimiterClient client()
    {
        final List<String> endpoints = new ArrayList<>();
        peers.values().forEach(a -> endpoints.add("127.0.0.1:" + a.getPort()));
        return LimiterClient.builder().endpoints(String.join(",", endpoints)).connections(1)
            .deadline(Duration.ofSeconds(3)).build();
    }

    @Override
    public void close()
    {
        ClosingTogether.close(nodes.values());
    }
}
