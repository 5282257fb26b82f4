package dev.limiter.server.cluster;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ShardMap;
import dev.limiter.raft.RaftNode;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.table.BucketTable;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;

/**
 * A node's Raft groups and the shards each owns: shard {@code s} belongs to group
 * {@code s mod groups}, and group 0, the control group, also carries the policy commands. Every
 * member hosts every group; each group has its own log, leader, leader lease, cluster clock, SYNC
 * marker and snapshots (one {@link Replication} and one {@link ReplicatedBuckets} per group), so the
 * groups' leaders decide their shards side by side, and Ratis spreads the leaders over the
 * members ({@link RaftNode}: each group prefers one member).
 */
public final class ReplicationGroups implements AutoCloseable
{
    private final RaftNode node;
    private final List<Replication> groups;
    private final PolicyState policies;
    private final int shards;

    /**
     * @param committed every shard's committed table, by shard id
     * @param groupCount how many Raft groups (1 to the number of shards)
     * @param fastLingerNanos least time, in nanoseconds, between a group's decision entries that carry FAST decisions only
     */
    public ReplicationGroups(final RaftNodeConfig raft, final BucketTable[] committed, final int groupCount, final PolicyState policies,
        final Map<String, InetSocketAddress> dataAddresses, final int raftPortOffset, final long fastLingerNanos)
    {
        if (groupCount < 1 || groupCount > committed.length)
        {
            throw new IllegalArgumentException("--raft-groups must be 1 to the number of shards (" + committed.length + "), was " +
                groupCount);
        }
        final List<ReplicatedBuckets> machines = new ArrayList<>();
        for (int g = 0; g < groupCount; g++)
        {
            final int group = g;
            final int[] owned = IntStream.range(0, committed.length).filter(s -> groupOf(s, groupCount) == group).toArray();
            machines.add(new ReplicatedBuckets(committed, owned, g == 0, policies, raft.nodeId()));
        }
        this.policies = policies;
        this.shards = committed.length;
        this.node = new RaftNode(raft, machines);
        final List<Replication> replications = new ArrayList<>();
        for (int g = 0; g < groupCount; g++)
        {
            replications.add(new Replication(node, g, machines.get(g), dataAddresses, raftPortOffset, fastLingerNanos));
        }
        this.groups = Collections.unmodifiableList(replications);
    }

    /** The group that owns {@code shard} among {@code groupCount}. */
    public static int groupOf(final int shard, final int groupCount)
    {
        return shard % groupCount;
    }

    /** Opens the Raft storage, joins every group and starts watching each group's leadership. */
    public void start() throws IOException
    {
        node.start();
        groups.forEach(Replication::start);
    }

    /** The control group (group 0): policy commands, audit, membership, and its own shards. */
    public Replication control()
    {
        return groups.get(0);
    }

    /** The replication of the group that owns {@code shard}. */
    public Replication ofShard(final int shard)
    {
        return groups.get(groupOf(shard, groups.size()));
    }

    /** Every group's replication, by group index. */
    public List<Replication> all()
    {
        return groups;
    }

    /**
     * Which node leads each shard now, as clients route by it, with this node's ordinal of every
     * enforced policy of the set in force (a client builds GLOBAL and CLIENT_IP bucket keys with it).
     */
    public ShardMap shardMap()
    {
        final int[] groupOfShard = new int[shards];
        for (int s = 0; s < shards; s++)
        {
            groupOfShard[s] = groupOf(s, groups.size());
        }
        final PolicySetIndex index = policies.index();
        final Map<String, Integer> ordinals = new HashMap<>();
        for (final CompiledPolicy policy : index.policies())
        {
            if (!policy.shadow())
            {
                ordinals.put(policy.id(), policy.ordinal());
            }
        }
        ordinals.put(index.defaultPolicy().id(), index.defaultPolicy().ordinal());
        return new ShardMap(groupOfShard, groups.stream().map(Replication::leaderAddress).toArray(String[]::new), index.version(),
            ordinals);
    }

    /** Whether this node may decide now for at least one group. */
    public boolean canDecideAny()
    {
        for (final Replication group : groups)
        {
            if (group.canDecide())
            {
                return true;
            }
        }
        return false;
    }

    /** Decisions applied on this replica, every group together. */
    public long appliedDecisions()
    {
        return groups.stream().mapToLong(g -> g.buckets().appliedDecisions()).sum();
    }

    /** A digest of every group's committed tables: equal on replicas that applied the same logs. */
    public long digest()
    {
        long digest = 0;
        for (final Replication group : groups)
        {
            digest = digest * 1_000_003 + group.buckets().digest();
        }
        return digest;
    }

    /** Leader changes seen, every group together. */
    public long leaderChanges()
    {
        return groups.stream().mapToLong(Replication::leaderChanges).sum();
    }

    /**
     * Makes {@code newMembers} (id to data-plane address, the complete new list) the members of
     * every group, one group after the other (group 0 last, so the list the control group shows is
     * the last to change). Any member may run it: each change goes to its group's leader.
     */
    public CompletableFuture<Void> changeMembers(final Map<String, InetSocketAddress> newMembers)
    {
        CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
        for (int g = groups.size() - 1; g >= 0; g--)
        {
            final Replication group = groups.get(g);
            chain = chain.thenCompose(done -> group.changeMembers(newMembers));
        }
        return chain;
    }

    /**
     * A planned stop: moves the lead of every group this node leads to a caught-up member, with
     * every decision answered here committed first; waits at most {@code boundMillis}.
     *
     * @return how many groups' leads moved
     */
    public int handOverLeadsBeforeStop(final long boundMillis)
    {
        return node.handOverLeadsBeforeStop(boundMillis);
    }

    @Override
    public void close() throws IOException
    {
        for (final Replication group : groups)
        {
            group.close();
        }
        node.close();
    }
}
