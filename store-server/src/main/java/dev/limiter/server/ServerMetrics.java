package dev.limiter.server;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.control.PolicyState;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * The node's meters in a Prometheus registry. Hot counters live in the shards as plain per-policy
 * arrays; the registry reads them when scraped, so deciding costs no meter update.
 */
public final class ServerMetrics
{
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Timer frameLatency;
    private final Counter protocolErrors;
    private final Counter connectionsOpened;

    ServerMetrics()
    {
        frameLatency = Timer.builder("limiter.decision.latency")
            .description("Time from decoding an acquire frame to writing its answer, per frame")
            .publishPercentiles(0.5, 0.95, 0.99)
            .distributionStatisticExpiry(Duration.ofMinutes(1))
            .register(registry);
        protocolErrors = Counter.builder("limiter.protocol.errors")
            .description("Frames answered with ERROR or connections closed for bad input")
            .register(registry);
        connectionsOpened = Counter.builder("limiter.connections.opened").register(registry);
    }

    /** SDK instances subscribed to policies at this node (what it reports to them as FLEET). */
    void bindFleet(final IntSupplier instances)
    {
        // A strong reference: the supplier is a method reference nothing else holds (Micrometer's default is weak).
        Gauge.builder("limiter.sdk.instances", instances, i -> i.getAsInt()).strongReference(true)
            .description("SDK instances subscribed to policies at this node; fleet-wide emergency budgets are split by it")
            .register(registry);
    }

    void bind(final PolicyState policies, final List<Shard> shards,
        final IntSupplier openConnections)
    {
        registerPolicyMeters(policies, shards);
        policies.onChange(() -> registerPolicyMeters(policies, shards));
        policies.onChange(() -> registerExemptionMeters(policies));
        Gauge.builder("limiter.exemptions.active", policies, p -> p.exemptions().size())
            .description("Exemptions in force").register(registry);
        for (final Shard shard : shards)
        {
            final String id = Integer.toString(shard.id());
            Gauge.builder("limiter.buckets", shard, s -> s.table().publishedSize()).tag("shard", id)
                .description("Buckets held (full buckets are not stored)").register(registry);
            Gauge.builder("limiter.buckets.max", shard, s -> s.table().maxBuckets()).tag("shard", id).register(registry);
            Gauge.builder("limiter.table.reserved.bytes", shard, s -> s.table().publishedReservedBytes()).tag("shard", id)
                .baseUnit("bytes").register(registry);
            FunctionCounter.builder("limiter.buckets.evicted", shard, s -> s.table().publishedEvictions()).tag("shard", id).register(registry);
            FunctionCounter.builder("limiter.store.full", shard, s -> s.table().publishedStoreFullRejections()).tag("shard", id)
                .description("Requests denied because no bucket could be stored").register(registry);
            Gauge.builder("limiter.shard.queue.depth", shard, Shard::queueDepth).tag("shard", id).register(registry);
            Gauge.builder("limiter.hot.key.share", shard, s -> s.hotKeys().topShare()).tag("shard", id)
                .description("Share of this shard's recent decisions that went to its busiest key (GET /v1/hot-keys names it)")
                .register(registry);
        }
        Gauge.builder("limiter.connections.open", openConnections, s -> s.getAsInt()).strongReference(true).register(registry);
        Gauge.builder("limiter.policies", policies, p -> p.index().size())
            .description("Policies in force, the default included").register(registry);
        Gauge.builder("limiter.policy.set.version", policies, PolicyState::setVersion)
            .description("Version of the policy set in force (every change adds one)").register(registry);
    }

    private final Set<String> meteredExemptions = ConcurrentHashMap.newKeySet();

    private void registerExemptionMeters(final PolicyState policies)
    {
        for (final Exemption exemption : policies.exemptions())
        {
            final String id = exemption.getId();
            if (meteredExemptions.add(id))
            {
                FunctionCounter.builder("limiter.exemption.bypasses", policies, p -> p.bypassesHere(id))
                    .description("Decisions an exemption bypassed on this node (answered EXEMPT, no tokens spent)")
                    .tags("exemption", id)
                    .register(registry);
            }
        }
    }

    private final Set<String> meteredPolicies = ConcurrentHashMap.newKeySet();

    /** Meters for every policy id not yet metered (ids keep their ordinal, so a meter stays valid across versions). */
    private void registerPolicyMeters(final PolicyState policies, final List<Shard> shards)
    {
        for (final CompiledPolicy policy : policies.index().policies())
        {
            final String id = policy.id();
            final int ordinal = policy.ordinal();
            if ((policy.shadow() || policy.rolloutShadowsOthers()) && meteredPolicies.add(id + "/shadow"))
            {
                // Shadow evaluations of the id: of its SHADOW version and of a rollout for the tenants it leaves out.
                FunctionCounter.builder("limiter.shadow.decisions", shards,
                        s -> Arrays.stream(policies.ordinalsOf(id)).mapToLong(o -> s.stream().mapToLong(x -> x.shadowAllowed(o)).sum()).sum())
                    .description("What shadow evaluations would have decided (they never deny)")
                    .tags("policy", id, "outcome", "would_allow")
                    .register(registry);
                FunctionCounter.builder("limiter.shadow.decisions", shards,
                        s -> Arrays.stream(policies.ordinalsOf(id)).mapToLong(o -> s.stream().mapToLong(x -> x.shadowDenied(o)).sum()).sum())
                    .description("What shadow evaluations would have decided (they never deny)")
                    .tags("policy", id, "outcome", "would_deny")
                    .register(registry);
            }
            if (policy.shadow())
            {
                continue;
            }
            if (!meteredPolicies.add(id))
            {
                continue;
            }
            FunctionCounter.builder("limiter.decisions", shards, s -> s.stream().mapToLong(x -> x.allowed(ordinal)).sum())
                .description("Decisions by policy and outcome")
                .tags("policy", id, "outcome", "allowed")
                .register(registry);
            FunctionCounter.builder("limiter.decisions", shards, s -> s.stream().mapToLong(x -> x.denied(ordinal)).sum())
                .description("Decisions by policy and outcome")
                .tags("policy", id, "outcome", "denied")
                .register(registry);
            Gauge.builder("limiter.policy.rollout.percent", policies, p ->
                {
                    final Policy current = p.current(id);
                    return current == null || !current.hasRollout() ? 100 : current.getRollout().getPercent();
                })
                .description("Share of tenants the newest version of each policy decides for (100: no rollout in progress)")
                .tags("policy", id)
                .register(registry);
            Gauge.builder("limiter.policy.version", policies, p ->
                {
                    final Policy current = p.current(id);
                    return current == null ? 0 : current.getVersion();
                })
                .description("Version in force of each policy (0: deleted)")
                .tags("policy", id)
                .register(registry);
        }
    }

    private Timer commitLatency;
    private DistributionSummary decisionsPerEntry;

    /** Cluster mode: replication meters. */
    void bindReplication(final Replication replication)
    {
        commitLatency = Timer.builder("limiter.replication.commit.latency")
            .description("From handing a batch of decisions to the log to its commit and apply on the leader")
            .publishPercentiles(0.5, 0.95, 0.99).distributionStatisticExpiry(Duration.ofMinutes(1)).register(registry);
        decisionsPerEntry = DistributionSummary.builder("limiter.replication.decisions.per.entry")
            .description("Decisions carried by one log entry (group commit)").register(registry);
        Gauge.builder("limiter.raft.term", replication, r -> safe(() -> r.node().term())).register(registry);
        Gauge.builder("limiter.raft.leader", replication, r -> r.isLeader() ? 1 : 0)
            .description("1 while this node leads").register(registry);
        Gauge.builder("limiter.raft.applied.index", replication, r -> safe(() -> r.node().lastAppliedIndex())).register(registry);
        FunctionCounter.builder("limiter.raft.leader.changes", replication, r -> r.leaderChanges()).register(registry);
        FunctionCounter.builder("limiter.raft.snapshots.installed", replication, r -> r.node().snapshotsInstalled()).register(registry);
        FunctionCounter.builder("limiter.raft.snapshots.taken", replication, r -> r.node().snapshotsTaken()).register(registry);
        Gauge.builder("limiter.raft.snapshot.size", replication, r -> r.node().lastSnapshotBytes()).baseUnit("bytes")
            .description("Size of the latest snapshot written").register(registry);
        Gauge.builder("limiter.raft.snapshot.duration", replication, r -> r.node().lastSnapshotNanos() / 1e9).baseUnit("seconds")
            .description("Time the latest snapshot took to write").register(registry);
        FunctionCounter.builder("limiter.replication.decisions.applied", replication, r -> r.buckets().appliedDecisions())
            .description("Decisions applied from the log on this replica").register(registry);
    }

    private static double safe(final LongSupplier value)
    {
        try
        {
            return value.getAsLong();
        }
        catch (final RuntimeException e)
        {
            return Double.NaN;
        }
    }

    private final Counter decisionsDropped = Counter.builder("limiter.replication.decisions.dropped")
        .description("Decisions made (FAST ones answered) that never reached the log: a failed batch or a resync dropped them")
        .register(registry);

    /** Decisions answered but never committed (dropped at a resync or in a batch that failed). */
    void decisionsDropped(final long decisions)
    {
        if (decisions > 0)
        {
            decisionsDropped.increment(decisions);
        }
    }

    void recordCommit(final int decisions, final long nanos)
    {
        if (commitLatency != null)
        {
            commitLatency.record(nanos, TimeUnit.NANOSECONDS);
            decisionsPerEntry.record(decisions);
        }
    }

    void recordFrameLatency(final long nanos)
    {
        frameLatency.record(nanos, TimeUnit.NANOSECONDS);
    }

    void protocolError()
    {
        protocolErrors.increment();
    }

    void connectionOpened()
    {
        connectionsOpened.increment();
    }

    private final ConcurrentHashMap<String, Counter> refusals = new ConcurrentHashMap<>();

    /**
     * Counts one refusal on a port: a connection turned away or closed (over the cap, idle, a
     * frame left unfinished, a failed TLS handshake) or a request the port does not take.
     *
     * @param port   data, admin or raft
     * @param reason a short kebab-case word for why
     */
    void refused(final String port, final String reason)
    {
        refusals.computeIfAbsent(port + "/" + reason, key -> Counter.builder("limiter.refusals")
            .description("Connections and requests a port refused or closed, by port and reason")
            .tags("port", port, "reason", reason)
            .register(registry)).increment();
    }

    /** A refusal on the data port. */
    void refused(final String reason)
    {
        refused("data", reason);
    }

    /** Prometheus text exposition of every meter. */
    public String scrape()
    {
        return registry.scrape();
    }

    public PrometheusMeterRegistry registry()
    {
        return registry;
    }
}
