package dev.limiter.server;

import com.sun.management.OperatingSystemMXBean;
import dev.limiter.protocol.BuildInfo;
import dev.limiter.protocol.ProtocolGeneration;
import dev.limiter.protocol.status.GroupStatus;
import dev.limiter.protocol.status.Member;
import dev.limiter.protocol.status.ShardStatus;
import dev.limiter.protocol.status.StatusReport;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.cluster.ReplicationGroups;
import dev.limiter.server.engine.Shard;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.region.RegionExchange;

import java.lang.management.ManagementFactory;
import java.util.List;

/** Builds a node's {@link StatusReport} (STATUS, {@code GET /status}) from the parts that hold each fact. */
final class NodeStatusReport
{
    private NodeStatusReport()
    {
    }

    /**
     * This node's standing: node id, address, role, leader, term and applied index (of the control
     * group), every Raft group (its leader, this node's role, term, applied index and shards),
     * members, process id, process CPU time, decision frames received and frames redirected
     * (NOT_LEADER), shards (each with this node's role for it, its group and that group's leader's
     * address) and their buckets. Fields in {@code status.proto}.
     *
     * @return the status as of now
     */
    static StatusReport of(final String nodeName, final String address, final boolean clustered,
        final ReplicationGroups groups, final RegionExchange regions, final ServerMetrics metrics,
        final List<Shard> shards)
    {
        final StatusReport.Builder status = StatusReport.newBuilder()
            .setId(nodeName)
            .setAddress(address)
            .setClustered(clustered)
            .setVersion(BuildInfo.current().version())
            .setCommit(BuildInfo.current().commit())
            .setProtocolGeneration(ProtocolGeneration.CURRENT);
        String role = "LEADER";
        final Replication replication = groups == null ? null : groups.control();
        if (replication != null)
        {
            role = roleIn(replication);
            status.setLeader(leaderOf(replication))
                .setLeaderAddress(replication.leaderAddress())
                .setTerm(termOf(replication))
                .setAppliedIndex(appliedIndexOf(replication))
                // Every member must run the same: ./limiter status compares them.
                .setElectionTimeoutMs(Math.toIntExact(replication.electionTimeoutMillis()))
                .setAppliedDecisions(groups.appliedDecisions())
                .setDigest(groups.digest());
            // Each Raft group: its leader, this node's role in it, and the shards it owns.
            for (final Replication group : groups.all())
            {
                final GroupStatus.Builder groupStatus = GroupStatus.newBuilder()
                    .setGroup(group.group())
                    .setLeader(leaderOf(group))
                    .setLeaderAddress(group.leaderAddress())
                    .setRole(roleIn(group))
                    .setTerm(termOf(group))
                    .setAppliedIndex(appliedIndexOf(group));
                for (final int shard : group.buckets().owned())
                {
                    groupStatus.addShards(shard);
                }
                status.addGroups(groupStatus);
            }
            replication.members().forEach((id, memberAddress) ->
                status.addMembers(Member.newBuilder().setId(id).setAddress(memberAddress)));
        }
        else
        {
            status.addMembers(Member.newBuilder().setId("single").setAddress(address));
        }
        status.setRole(role);
        if (regions != null)
        {
            status.setRegion(regions.status());
        }
        // Which process this is (./limiter drill leader-kill and store-failure stop and restart it by it).
        // uint32 in status.proto: every operating system's process ids fit 32 bits unsigned.
        status.setPid((int)ProcessHandle.current().pid());
        // What a load generator divides by its decisions: this process's CPU and the frames it took.
        status.setCpuNanos(processCpuNanos())
            .setDecisionFrames(metrics.decisionFrames())
            .setRedirects(metrics.redirects());
        for (int i = 0; i < shards.size(); i++)
        {
            // A member's buckets are its committed tables (the leader's deciding tables run ahead of them).
            final Replication group = groups == null ? null : groups.ofShard(i);
            final ShardStatus.Builder shard =
                ShardStatus.newBuilder().setShard(i).setRole(group == null ? role : roleIn(group));
            if (group != null)
            {
                shard.setGroup(group.group()).setLeaderAddress(group.leaderAddress());
            }
            status.addShards(shard.setBuckets(group != null ? group.buckets().committed(i).publishedSize() :
                shards.get(i).table().publishedSize()));
        }
        return status.build();
    }

    /** The group's leader's node id, or "" while it has none. */
    private static String leaderOf(final Replication group)
    {
        final String leader = group.leaderId();
        return leader == null ? "" : leader;
    }

    private static String roleIn(final Replication group)
    {
        if (!group.isLeader())
        {
            return "FOLLOWER";
        }
        return group.canDecide() ? "LEADER" : group.handingOver() ? "HANDING_OVER" : "LEADER_STARTING";
    }

    private static long termOf(final Replication group)
    {
        try
        {
            return group.member().term();
        }
        catch (final RuntimeException stopping)
        {
            return -1;
        }
    }

    private static long appliedIndexOf(final Replication group)
    {
        try
        {
            return group.member().lastAppliedIndex();
        }
        catch (final RuntimeException stopping)
        {
            return -1;
        }
    }

    /** CPU time this process has used, all threads, in nanoseconds; -1 where the JVM cannot say. */
    private static long processCpuNanos()
    {
        return ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os ?
            os.getProcessCpuTime() : -1;
    }
}
