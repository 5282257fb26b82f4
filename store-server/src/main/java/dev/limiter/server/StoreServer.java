package dev.limiter.server;

import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.ReloadingTls;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.protocol.status.StatusReport;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.admin.AdminServer;
import dev.limiter.server.admin.AdminToken;
import dev.limiter.server.cluster.Membership;
import dev.limiter.server.cluster.PeerGenerations;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.cluster.ReplicationGroups;
import dev.limiter.server.control.ControlTicker;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.EngineMeters;
import dev.limiter.server.engine.FrameRouter;
import dev.limiter.server.engine.MonotonicClock;
import dev.limiter.server.engine.RejectedDecisions;
import dev.limiter.server.engine.Shard;
import dev.limiter.server.history.NodeHistory;
import dev.limiter.server.metrics.FalseRejectionMeters;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.net.DataPlaneHandler;
import dev.limiter.server.net.PolicyPublisher;
import dev.limiter.server.net.SdkReportGate;
import dev.limiter.server.net.ServerTls;
import dev.limiter.server.region.RegionExchange;
import dev.limiter.server.region.RegionGroups;
import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.BucketRates;
import dev.limiter.server.table.BucketTable;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.util.concurrent.FastThreadLocal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * One store node: the binary data plane, its shards, and the admin HTTP endpoint. Start with
 * {@link #start()}, stop with {@link #close()} (idempotent).
 * <p>
 * The wiring of a node, in start-up order and reverse on close: one sequence, kept in one place;
 * what the parts do is in their packages, and what the running node answers about itself is
 * {@link NodeQueries}'.
 */
public final class StoreServer implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(StoreServer.class);
    /**
     * A planned stop waits at most this long, in milliseconds, for its leads to move: a commit or two
     * of what it answered, then an election with the successor caught up.
     */
    static final long STOP_HAND_OVER_MILLIS = 3000;
    /** How long each other member has to answer the HELLO that checks its protocol generation at start. */
    private static final int PEER_GREETING_TIMEOUT_MS = 500;
    /** What an SDK reads in one frame: the largest policy frame the publisher sends. */
    private static final int MAX_PUBLISHED_FRAME_BYTES = 16 << 20;

    private final NodeConfig config;
    private final MonotonicClock clock;
    private final PolicySeed seed;
    private final PolicyState policyState;
    private final String adminToken;
    private final Transport transport;
    private PolicyControl control;
    private PolicyPublisher publisher;
    private ControlTicker ticker;
    /** The bounded history of this node's decisions (GET /v1/history); null until started. */
    private NodeHistory history;
    private final ServerMetrics metrics = new ServerMetrics();
    private final SdkReportGate reportGate = new SdkReportGate();
    /** Rejected decisions sampled by every event loop's frames ({@code GET /v1/decisions/rejected}). */
    private final RejectedDecisions rejections = new RejectedDecisions();
    /** The TLS files of every port (data, admin, Raft) and of the regions' exchange, followed on disk; or null. */
    private final ReloadingTls tlsFiles;
    /** TLS on the data and admin ports, or null. */
    private final ServerTls tls;
    private final List<Shard> shards = new ArrayList<>();
    private final DataPort dataPort;
    private final NodeQueries queries;
    private EventLoopGroup bossGroup;
    private EventLoopGroup workerGroup;
    private AdminServer admin;
    /** Cluster mode: the node's Raft groups, or null on a single node. */
    private ReplicationGroups groups;
    private volatile boolean closed;
    /** The regions' exchange, when this node belongs to a region. */
    private RegionExchange regions;

    /**
     * @throws PolicyValidationException when the policy file is unreadable or invalid
     */
    public StoreServer(final NodeConfig config, final MonotonicClock clock)
    {
        this.config = Objects.requireNonNull(config, "config");
        this.policyState = new PolicyState(config.shards().count(), config.region() != null);
        this.clock = clock;
        this.seed = PolicySeed.read(config.storage(), config.shards().count());
        this.adminToken = AdminToken.resolve(config.admin().enabled(), config.admin().token(),
            config.storage().dataDir());
        this.tlsFiles = !config.tls().enabled() ? null :
            ReloadingTls.load(config.tls().cert(), config.tls().key(), config.tls().ca()).listener(this::tlsChecked);
        if (tlsFiles != null)
        {
            metrics.bindCertificateExpiry(() -> tlsFiles.certificate().getNotAfter().toInstant().getEpochSecond());
            metrics.bindTlsFilesRefused(tlsFiles::refusing);
        }
        this.tls = ServerTls.over(tlsFiles, config.tls().clientAuth(), metrics);
        this.transport = Transport.of(config.dataPort());
        this.dataPort = new DataPort(config.dataPort(), metrics, tls);
        this.queries = new NodeQueries(config, dataPort, transport.name(), shards, policyState, metrics, rejections,
            new NodeQueries.Started(() -> groups, () -> regions, () -> history, () -> closed));
        if (!config.clustered())
        {
            // A single node is its own log: the file is the first version of every policy.
            policyState.apply(seed.command(config.nodeName()));
        }
    }

    public StoreServer(final NodeConfig config)
    {
        this(config, MonotonicClock.SYSTEM);
    }

    /**
     * @throws IllegalArgumentException for invalid settings (see {@link ServerConfig#build()})
     * @throws PolicyValidationException when the policy file is unreadable or invalid
     */
    public StoreServer(final ServerConfig config, final MonotonicClock clock)
    {
        this(config.build(), clock);
    }

    public StoreServer(final ServerConfig config)
    {
        this(config.build(), MonotonicClock.SYSTEM);
    }

    /** Binds the ports and starts the shards. */
    public StoreServer start() throws InterruptedException
    {
        final DataPortConfig dataPortConfig = config.dataPort();
        bossGroup = new MultiThreadIoEventLoopGroup(1, transport.ioFactory());
        workerGroup = new MultiThreadIoEventLoopGroup(dataPortConfig.ioThreads(), transport.ioFactory());
        final List<EventLoop> loops = new ArrayList<>();
        workerGroup.forEach(executor -> loops.add((EventLoop)executor));
        final ShardConfig shardConfig = config.shards();
        for (int i = 0; i < shardConfig.count(); i++)
        {
            // Shard i belongs to event loop i mod n, unless shards get threads of their own.
            shards.add(new Shard(i, shardConfig.count(), shardConfig.maxBucketsPerShard(),
                shardConfig.keyArenaBytesPerShard(), clock, bucketRates(i),
                shardConfig.ownThreads() ? null : loops.get(i % loops.size())));
        }
        EngineMeters.bind(metrics.registry(), policyState, shards, dataPort::connections);
        FalseRejectionMeters.bind(metrics.registry(), policyState);
        if (config.clustered())
        {
            startReplication();
        }
        publisher = new PolicyPublisher(policyState, MAX_PUBLISHED_FRAME_BYTES,
            () -> metrics.refused("sdk-instance-ids-per-address"));
        metrics.bindFleet(publisher::instanceCount);
        control = new PolicyControl(policyState, groups == null ? null : groups.control(), shardConfig.count());
        if (config.region() != null)
        {
            final ReplicationGroups replicated = groups;
            regions = new RegionExchange(config.region(), policyState, control, shards,
                // A leader counts once ready: it has applied every entry of earlier terms (a raise proposed by the
                // leader before it included), so its first report already holds whatever that leader had proposed.
                replicated == null ? () -> true : () -> replicated.control().canDecide(),
                replicated == null || replicated.all().size() == 1 ? RegionGroups.SINGLE : new ShareCopies(replicated), replicated != null,
                tlsFiles == null ? null : tlsFiles.context());
            shards.forEach(shard -> shard.regions(regions.forShard(shard.id())));
            regions.bind(metrics.registry());
            regions.start();
        }
        final FastThreadLocal<FrameRouter> routers = new FastThreadLocal<>()
        {
            @Override
            protected FrameRouter initialValue()
            {
                return new FrameRouter(metrics, rejections);
            }
        };
        dataPort.bind(bossGroup, workerGroup, transport.channelType(), () -> new DataPlaneHandler(policyState::index,
            policyState::activeExemptions, publisher, () -> control, shards, metrics, routers, groups,
            queries::statusJson, reportGate));
        final ReplicationGroups deciding = groups;
        ticker = new ControlTicker(policyState, control, () -> !closed && (deciding == null || deciding.control().canDecide()),
            System::currentTimeMillis, config.nodeName());
        ticker.start();
        history = NodeHistory.of(config.nodeName(), config.region() == null ? null : config.region().region(),
            metrics.registry(), policyState);
        history.start();
        if (config.admin().enabled())
        {
            admin = new AdminServer(dataPortConfig.host(), config.admin().port(), metrics, queries, bossGroup,
                workerGroup, transport.channelType(), control, adminToken,
                new Membership(groups, control, config.cluster().raftPortOffset()),
                new AdminServer.Limits(config.admin().maxConnections(), config.admin().idleTimeoutMillis(),
                    dataPortConfig.frameTimeoutMillis()), tls);
            admin.start();
        }
        if (tlsFiles != null && config.tls().reloadMillis() > 0)
        {
            tlsFiles.watch(Duration.ofMillis(config.tls().reloadMillis()));
        }
        logStarted();
        return this;
    }

    private void logStarted()
    {
        final DataPortConfig dataPortConfig = config.dataPort();
        final ClusterConfig cluster = config.cluster();
        LOG.info("limiter store serving on {}:{} ({} transport, {} shards on {}, {} io threads, {} policies{}), admin on {}",
            dataPortConfig.host(), port(), transport.name() + transport.note(), shards.size(),
            config.shards().ownThreads() ? "their own threads" : "the event loops",
            dataPortConfig.ioThreads(), policyState.index().size(),
            cluster.clustered() ? ", member " + cluster.nodeId() + " of " + cluster.raftGroups() +
                " Raft group(s), election timeout " + cluster.electionTimeoutMillis() + " ms" : "",
            admin == null ? "off" : dataPortConfig.host() + ":" + admin.port());
    }

    /**
     * A stored bucket on {@code shard} refills at the rate of the policy version its key names (its
     * shard's share, for a budget split across shards): the same on every
     * replica whatever it has applied of other groups' logs, so sweeps evict alike everywhere.
     */
    private BucketRates bucketRates(final int shard)
    {
        return (policy, key, keyOffset, keyLength) ->
        {
            final long version = BucketKeys.version(key, keyOffset);
            return policyState.rateIfKnown(policy, BucketKeys.policyVersion(version), BucketKeys.limitIndex(version), shard);
        };
    }

    private void startReplication()
    {
        final ClusterConfig cluster = config.cluster();
        PeerGenerations.check(cluster.peers(), cluster.nodeId(), tlsFiles == null ? null : tlsFiles.context(),
            PEER_GREETING_TIMEOUT_MS);
        final BucketTable[] committed = new BucketTable[shards.size()];
        for (int i = 0; i < committed.length; i++)
        {
            committed[i] = new BucketTable(config.shards().maxBucketsPerShard(),
                config.shards().keyArenaBytesPerShard(), bucketRates(i), true);
        }
        final RaftNodeConfig raft = config.raftNodeConfig()
            .tls(tlsFiles == null ? null : tlsFiles.keyManager(), tlsFiles == null ? null : tlsFiles.trustManager(),
                tlsFiles == null ? () -> 0 : tlsFiles::reloads)
            .refusals(reason -> metrics.refused("raft", reason));
        groups = new ReplicationGroups(raft, committed, cluster.raftGroups(), policyState, cluster.peers(),
            cluster.raftPortOffset(), cluster.fastLingerNanos());
        groups.control().bootstrapWith(seed.command(config.nodeName()));
        for (final Replication group : groups.all())
        {
            group.shards(shards.stream().filter(shard -> groups.ofShard(shard.id()) == group).toList());
        }
        shards.forEach(shard -> shard.replicate(groups.ofShard(shard.id()), metrics, policyState::rate,
            cluster.maxUncommittedBytesPerShard(), cluster.logFormat() == ClusterConfig.LogFormat.COMPACT));
        metrics.bindReplication(groups.all());
        try
        {
            groups.start();
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot start replication in " + config.storage().dataDir() + ": " +
                e.getMessage(), e);
        }
    }

    /** Cluster mode: the control group's replication state (group 0), or null on a single node. */
    public Replication replication()
    {
        return groups == null ? null : groups.control();
    }

    /** Cluster mode: every Raft group of this node, or null on a single node. */
    public ReplicationGroups replicationGroups()
    {
        return groups;
    }

    /** The busiest bucket keys of each shard, from a sample of its decisions (GET /v1/hot-keys). */
    public HotKeyReport hotKeys()
    {
        return queries.hotKeys();
    }

    /** {@link #status()} as JSON: the STATUS answer and {@code GET /status}. */
    public String statusJson()
    {
        return queries.statusJson();
    }

    /** This node's standing now (fields in {@code status.proto}). */
    public StatusReport status()
    {
        return queries.status();
    }

    /** Buckets held by all shards. */
    public long bucketCount()
    {
        return queries.bucketCount();
    }

    /** The bound data-plane port. */
    public int port()
    {
        return dataPort.port();
    }

    /** The bound admin port, or -1 when off. */
    public int adminPort()
    {
        return admin == null ? -1 : admin.port();
    }

    public ServerMetrics metrics()
    {
        return metrics;
    }

    /** The policy set in force now. */
    public PolicySetIndex policies()
    {
        return policyState.index();
    }

    /** The control plane's replicated state (policies, versions, audit). */
    public PolicyState policyState()
    {
        return policyState;
    }

    /** The data and admin ports' transport: io_uring, epoll or nio. */
    public String transport()
    {
        return transport.name();
    }

    /**
     * Checks the TLS files now (as the timer of {@code --tls-reload-ms} does): new connections on
     * every port use changed files that load; files that do not are logged, counted and ignored.
     *
     * @return what the check did; UNCHANGED without TLS
     */
    public ReloadingTls.Outcome reloadTls()
    {
        return tlsFiles == null ? ReloadingTls.Outcome.UNCHANGED : tlsFiles.reload();
    }

    private void tlsChecked(final ReloadingTls.Outcome outcome, final String detail)
    {
        if (outcome == ReloadingTls.Outcome.RELOADED)
        {
            LOG.info("TLS: new connections on the data, admin and Raft ports now use {}", detail);
            metrics.tlsReload("reloaded");
        }
        else
        {
            LOG.warn("TLS: the changed files do not load: {}", detail);
            metrics.tlsReload("failed");
        }
    }

    /**
     * Stops the node as planned (SIGTERM): it takes no new connection, hands the lead of every
     * group it leads to a caught-up member once what it answered is committed (at most
     * {@link #STOP_HAND_OVER_MILLIS}), then stops. Its callers' next calls go to the new leaders.
     */
    @Override
    public void close()
    {
        stop(true);
    }

    /**
     * Stops the node as a crash would, as far as the cluster can tell: no lead is handed over, and
     * FAST decisions answered but not yet committed are lost (their published bound). For drills.
     */
    public void halt()
    {
        stop(false);
    }

    private void stop(final boolean handOver)
    {
        if (closed)
        {
            return;
        }
        closed = true;
        if (ticker != null)
        {
            ticker.close();
        }
        if (history != null)
        {
            history.close();
        }
        if (tlsFiles != null)
        {
            tlsFiles.close();
        }
        if (regions != null)
        {
            regions.close();
        }
        dataPort.stopListening();
        if (admin != null)
        {
            admin.close();
        }
        if (groups != null && handOver)
        {
            // Connections stay open meanwhile: answers of decisions being committed still reach
            // their callers, and calls refused from here on name the new leader.
            final int moved = groups.handOverLeadsBeforeStop(STOP_HAND_OVER_MILLIS);
            LOG.info("stopping: handed {} group lead(s) over", moved);
        }
        dataPort.closeConnections();
        if (groups != null)
        {
            // Before the event loops stop: frames waiting on the log are released on their loops,
            // then the log closes (its late answers find nothing left to complete).
            shards.forEach(Shard::abandonLog);
            policyState.stopWaiting(); // a decision group waiting for the control group must not hold the close up
            try
            {
                groups.close();
            }
            catch (final IOException e)
            {
                LOG.warn("closing replication: {}", e.toString());
            }
        }
        if (workerGroup != null)
        {
            workerGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
            bossGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        }
        shards.forEach(Shard::stop);
        LOG.info("limiter store stopped");
    }
}
