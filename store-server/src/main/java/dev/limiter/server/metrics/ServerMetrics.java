package dev.limiter.server.metrics;

import dev.limiter.protocol.BuildInfo;
import dev.limiter.protocol.ProtocolGeneration;
import dev.limiter.server.cluster.Replication;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
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
    private final Counter decisionFrames;
    private final Counter redirects;

    /**
     * The {@code le} bounds of {@code limiter_decision_latency_seconds_bucket}: the latency SLO counts frames
     * answered within {@code le="0.005"} (5 ms); the others place the tail, down to the microseconds a frame
     * usually takes ({@code histogram_quantile} reads p99 from them). With buckets, Micrometer's Prometheus
     * registry prints the timer as a histogram only: no {@code quantile} series.
     */
    static final Duration[] DECISION_LATENCY_BUCKETS = {
        Duration.ofNanos(10_000), Duration.ofNanos(25_000), Duration.ofNanos(50_000), Duration.ofNanos(100_000),
        Duration.ofNanos(250_000), Duration.ofNanos(500_000), Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(5),
        Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(100), Duration.ofSeconds(1)};

    public ServerMetrics()
    {
        frameLatency = Timer.builder("limiter.decision.latency")
            .description("Time from decoding an acquire frame to writing its answer, per frame")
            .publishPercentiles(0.5, 0.95, 0.99)
            // Buckets for the latency SLO's burn-rate rules (ops/prometheus/limiter-rules.yml, docs/operations.md).
            .serviceLevelObjectives(DECISION_LATENCY_BUCKETS)
            .distributionStatisticExpiry(Duration.ofMinutes(1))
            .register(registry);
        protocolErrors = Counter.builder("limiter.protocol.errors")
            .description("Frames answered with ERROR or connections closed for bad input")
            .register(registry);
        connectionsOpened = Counter.builder("limiter.connections.opened").register(registry);
        decisionFrames = Counter.builder("limiter.decision.frames")
            .description("ACQUIRE and BATCH_ACQUIRE frames received on the data port, decided here or not")
            .register(registry);
        redirects = Counter.builder("limiter.redirects")
            .description("Frames answered NOT_LEADER, sending the caller to the leader (decision frames and SDK reports)")
            .register(registry);
        final BuildInfo build = BuildInfo.current();
        Gauge.builder("limiter.build.info", () -> 1)
            .description("Always 1; its labels name the build: version, git commit and protocol generation")
            .tags("version", build.version(), "commit", build.commit(),
                "protocol_generation", Integer.toString(ProtocolGeneration.CURRENT))
            .register(registry);
    }

    /** One ACQUIRE or BATCH_ACQUIRE frame received. */
    public void decisionFrame()
    {
        decisionFrames.increment();
    }

    /** One frame answered NOT_LEADER. */
    public void redirected()
    {
        redirects.increment();
    }

    /** Decision frames received since start. */
    public long decisionFrames()
    {
        return (long)decisionFrames.count();
    }

    /** Frames answered NOT_LEADER since start. */
    public long redirects()
    {
        return (long)redirects.count();
    }

    /** SDK instances subscribed to policies at this node (what it reports to them as FLEET). */
    public void bindFleet(final IntSupplier instances)
    {
        // A strong reference: the supplier is a method reference nothing else holds (Micrometer's default is weak).
        Gauge.builder("limiter.sdk.instances", instances, i -> i.getAsInt()).strongReference(true)
            .description("SDK instances subscribed to policies at this node; fleet-wide emergency budgets are split by it")
            .register(registry);
    }

    /**
     * The node's TLS certificate: when the one in use stops being valid (seconds since the epoch),
     * for an alert well before it does; it follows reloads of the files.
     */
    public void bindCertificateExpiry(final LongSupplier notAfterEpochSeconds)
    {
        Gauge.builder("limiter.tls.certificate.expiry.timestamp.seconds", notAfterEpochSeconds, LongSupplier::getAsLong).strongReference(true)
            .description("When the TLS certificate of the data, admin and Raft ports expires (its notAfter), seconds since the epoch")
            .register(registry);
    }

    /** 1 while the TLS files on disk have changed and do not load (the previous ones are served), else 0. */
    public void bindTlsFilesRefused(final BooleanSupplier refusing)
    {
        Gauge.builder("limiter.tls.files.refused", refusing, r -> r.getAsBoolean() ? 1 : 0).strongReference(true)
            .description("1 while the TLS files on disk have changed and do not load: the previous certificate is still served")
            .register(registry);
    }

    /** A check of the TLS files that loaded new ones ({@code reloaded}) or found them bad and kept the old ones ({@code failed}). */
    public void tlsReload(final String result)
    {
        Counter.builder("limiter.tls.reloads").description("Changed TLS files loaded (reloaded) or refused, the previous ones kept (failed)")
            .tags("result", result).register(registry).increment();
    }

    private Timer commitLatency;
    private DistributionSummary decisionsPerEntry;

    /** Cluster mode: replication meters, the Raft ones once per group (tag {@code group}). */
    public void bindReplication(final List<Replication> groups)
    {
        commitLatency = Timer.builder("limiter.replication.commit.latency")
            .description("From handing a batch of decisions to the log to its commit and apply on the leader")
            .publishPercentiles(0.5, 0.95, 0.99).distributionStatisticExpiry(Duration.ofMinutes(1)).register(registry);
        decisionsPerEntry = DistributionSummary.builder("limiter.replication.decisions.per.entry")
            .description("Decisions carried by one log entry (group commit: the batches of all of a group's shards)").register(registry);
        for (final Replication replication : groups)
        {
            replication.onDecisionEntry(decisionsPerEntry::record);
            final Tags group = Tags.of("group", String.valueOf(replication.group()));
            Gauge.builder("limiter.raft.term", replication, r -> safe(() -> r.member().term())).tags(group).register(registry);
            Gauge.builder("limiter.raft.leader", replication, r -> r.isLeader() ? 1 : 0).tags(group)
                .description("1 while this node leads the group").register(registry);
            Gauge.builder("limiter.raft.applied.index", replication, r -> safe(() -> r.member().lastAppliedIndex())).tags(group)
                .register(registry);
            FunctionCounter.builder("limiter.raft.leader.changes", replication, r -> r.leaderChanges()).tags(group).register(registry);
            FunctionCounter.builder("limiter.raft.snapshots.installed", replication, r -> r.member().snapshotsInstalled()).tags(group)
                .register(registry);
            FunctionCounter.builder("limiter.raft.snapshots.taken", replication, r -> r.member().snapshotsTaken()).tags(group)
                .register(registry);
            Gauge.builder("limiter.raft.snapshot.size", replication, r -> r.member().lastSnapshotBytes()).tags(group).baseUnit("bytes")
                .description("Size of the latest snapshot of the group written").register(registry);
            Gauge.builder("limiter.raft.snapshot.duration", replication, r -> r.member().lastSnapshotNanos() / 1e9).tags(group)
                .baseUnit("seconds").description("Time the latest snapshot of the group took, from the copy of the state to the synced file")
                .register(registry);
            FunctionCounter.builder("limiter.raft.log.segments.freed", replication, r -> r.member().purgedSegmentsFreed()).tags(group)
                .description("Log segments purged after a snapshot whose space was freed off the Raft log thread").register(registry);
            Gauge.builder("limiter.raft.snapshot.copy.duration", replication, r -> r.member().lastSnapshotCopyNanos() / 1e9).tags(group)
                .baseUnit("seconds").description("Time the latest snapshot stopped the group's apply thread (the copy into memory)")
                .register(registry);
            FunctionCounter.builder("limiter.replication.decisions.applied", replication, r -> r.buckets().appliedDecisions())
                .tags(group).description("Decisions applied from the group's log on this replica").register(registry);
        }
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
    public void decisionsDropped(final long decisions)
    {
        if (decisions > 0)
        {
            decisionsDropped.increment(decisions);
        }
    }

    /** Decisions counted by {@link #decisionsDropped(long)} since the node started. */
    public long decisionsDroppedSoFar()
    {
        return (long)decisionsDropped.count();
    }

    private final Counter shadowsSkipped = Counter.builder("limiter.shadow.skipped")
        .description("Shadow evaluations not made because their bucket's shard is led by another node (several Raft groups)")
        .register(registry);

    /** Shadow evaluations skipped: their shard's group is led elsewhere (a shadow never refuses a request). */
    public void shadowsSkipped(final long evaluations)
    {
        shadowsSkipped.increment(evaluations);
    }

    /** A shard's batch committed {@code nanos} after it was handed to the log. */
    public void recordCommit(final long nanos)
    {
        if (commitLatency != null)
        {
            commitLatency.record(nanos, TimeUnit.NANOSECONDS);
        }
    }

    public void recordFrameLatency(final long nanos)
    {
        frameLatency.record(nanos, TimeUnit.NANOSECONDS);
    }

    public void protocolError()
    {
        protocolErrors.increment();
    }

    public void connectionOpened()
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
    public void refused(final String port, final String reason)
    {
        refusals.computeIfAbsent(port + "/" + reason, key -> Counter.builder("limiter.refusals")
            .description("Connections and requests a port refused or closed, by port and reason")
            .tags("port", port, "reason", reason)
            .register(registry)).increment();
    }

    /** A refusal on the data port. */
    public void refused(final String reason)
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
