package dev.limiter.server;

import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.protocol.status.StatusReport;
import dev.limiter.raft.RaftGroupMember;
import dev.limiter.server.admin.NodeStatus;
import dev.limiter.server.admin.Readiness;
import dev.limiter.server.admin.RejectionSamples;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.cluster.ReplicationGroups;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.HotKeyReports;
import dev.limiter.server.engine.RejectedDecisions;
import dev.limiter.server.engine.ShadowComparisons;
import dev.limiter.server.engine.Shard;
import dev.limiter.server.history.NodeHistory;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.region.RegionExchange;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * What a running node answers about itself: its status (the STATUS frame, {@code GET /status}),
 * liveness, readiness and health, hot keys, sampled rejections, shadow comparisons, history and the
 * regions' report. Each answer is read from the part that holds the facts, as it stands: the Raft
 * groups, the regions' exchange and the history exist once the node has started them (null before,
 * and on a node without them).
 */
final class NodeQueries implements NodeStatus
{
    private final String nodeName;
    private final boolean clustered;
    private final DataPort dataPort;
    private final String transport;
    private final List<Shard> shards;
    private final PolicyState policyState;
    private final ServerMetrics metrics;
    private final RejectionSamples rejections;
    private final Supplier<ReplicationGroups> groups;
    private final Supplier<RegionExchange> regions;
    private final Supplier<NodeHistory> history;
    private final BooleanSupplier closed;

    /** The parts a node builds as it starts, read when asked. */
    record Started(Supplier<ReplicationGroups> groups, Supplier<RegionExchange> regions,
        Supplier<NodeHistory> history, BooleanSupplier closed)
    {
    }

    /**
     * @param shards the node's shards, as they are added at start
     */
    NodeQueries(final NodeConfig config, final DataPort dataPort, final String transport, final List<Shard> shards,
        final PolicyState policyState, final ServerMetrics metrics, final RejectedDecisions rejections,
        final Started started)
    {
        this.nodeName = config.nodeName();
        this.clustered = config.clustered();
        this.dataPort = dataPort;
        this.transport = transport;
        this.shards = shards;
        this.policyState = policyState;
        this.metrics = metrics;
        this.rejections = new SampledRejections(config.nodeName(), rejections);
        this.groups = started.groups();
        this.regions = started.regions();
        this.history = started.history();
        this.closed = started.closed();
    }

    /** This node's standing now ({@link NodeStatusReport}; fields in {@code status.proto}). */
    StatusReport status()
    {
        return NodeStatusReport.of(nodeName, dataPort.address(), clustered, groups.get(), regions.get(), metrics,
            shards);
    }

    /** {@link #status()} as JSON ({@link StatusJson}): the STATUS answer and {@code GET /status}. */
    @Override
    public String statusJson()
    {
        return StatusJson.print(status());
    }

    @Override
    public boolean healthy()
    {
        return !closed.getAsBoolean() && dataPort.listening();
    }

    @Override
    public Readiness readiness()
    {
        final List<String> notReady = new ArrayList<>();
        if (!healthy())
        {
            notReady.add("the data port is not serving");
        }
        final ReplicationGroups replicated = groups.get();
        if (replicated != null)
        {
            for (final Replication group : replicated.all())
            {
                final String behind = behind(group);
                if (behind != null)
                {
                    notReady.add(behind);
                }
            }
        }
        if (!policyState.bootstrapped())
        {
            notReady.add("the policy set is not loaded yet");
        }
        return new Readiness(notReady);
    }

    /** Why a group keeps this member from being ready, or null when it does not. */
    private static String behind(final Replication group)
    {
        if (group.leaderId() == null || group.leaderId().isEmpty())
        {
            return "Raft group " + group.group() + " has no known leader";
        }
        final long lag;
        try
        {
            final RaftGroupMember member = group.member();
            lag = member.lastCommittedIndex() - member.lastAppliedIndex();
        }
        catch (final RuntimeException stopping)
        {
            return "Raft group " + group.group() + " is not running: " + stopping.getMessage();
        }
        if (lag > Readiness.MAX_APPLY_LAG)
        {
            return "Raft group " + group.group() + " has " + lag + " committed entries left to apply (ready at " +
                Readiness.MAX_APPLY_LAG + " or fewer)";
        }
        return null;
    }

    @Override
    public String healthJson()
    {
        return "{\"status\":\"" + (healthy() ? "UP" : "DOWN") + "\",\"port\":" + dataPort.port() + ",\"shards\":" +
            shards.size() + ",\"buckets\":" + bucketCount() + ",\"policies\":" + policyState.index().size() +
            ",\"policySetVersion\":" + policyState.index().version() + ",\"transport\":\"" + transport + "\"}";
    }

    /** Buckets held by all shards. */
    long bucketCount()
    {
        return shards.stream().mapToLong(s -> s.table().publishedSize()).sum();
    }

    /** The busiest bucket keys of each shard, from a sample of its decisions (GET /v1/hot-keys). */
    @Override
    public HotKeyReport hotKeys()
    {
        return HotKeyReports.of(shards, policyState);
    }

    @Override
    public RejectionSamples rejections()
    {
        return rejections;
    }

    /** Policy {@code id}'s shadow version against what was enforced, on this node's shards. */
    @Override
    public CompletableFuture<NodeStatus.Answer> shadowComparison(final String id, final long sinceMillis)
    {
        try
        {
            return ShadowComparisons.of(shards, policyState, id, sinceMillis)
                .thenApply(c -> new NodeStatus.Answer(200, c.toJson()));
        }
        catch (final ShadowComparisons.NothingToCompare e)
        {
            return CompletableFuture.completedFuture(new NodeStatus.Answer(404, e.getMessage()));
        }
    }

    @Override
    public NodeStatus.Answer regionReport(final String authorization)
    {
        final RegionExchange exchange = regions.get();
        return exchange == null ? NodeStatus.super.regionReport(authorization) : exchange.report(authorization);
    }

    @Override
    public String historyJson(final long sinceMillis)
    {
        final NodeHistory kept = history.get();
        return kept == null ? null : kept.json(sinceMillis);
    }
}
