package dev.limiter.server;

import dev.limiter.protocol.BuildInfo;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.cluster.PeerGenerations;
import dev.limiter.server.region.RegionConfig;
import dev.limiter.server.net.Listener;
import dev.limiter.server.net.TlsClientAuth;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** {@code ./limiter server}: runs one store node until interrupted. */
@Command(
    name = "server",
    mixinStandardHelpOptions = true,
    versionProvider = ServerMain.Version.class,
    description = {"Runs one limiter store node. With no flags it serves on 127.0.0.1:7400, admin HTTP on 7480.",
        "With --node-id and --peers it is a member of a replicated cluster (Raft port = data port + offset)."},
    sortOptions = false)
public final class ServerMain implements Callable<Integer>
{
    @Option(names = SettingSources.CONFIG_OPTION, paramLabel = "FILE",
        description = "Settings file (default: $LIMITER_CONFIG): lines of key=value, each key a server option without '--' " +
            "(e.g. shards=4, peers=n1=10.0.0.1:7400,n2=...). Every option may also come from the environment variable " +
            "LIMITER_<OPTION> (e.g. LIMITER_SHARDS, LIMITER_DATA_DIR). A flag wins over the environment, the environment " +
            "over the file, the file over the default; all three are checked alike.")
    Path config;

    @Option(names = "--host", description = "Address to bind (default: ${DEFAULT-VALUE}).")
    String host = DataPortConfig.Defaults.HOST;

    @Option(names = "--port", description = "Data-plane port, 0 for any free port (default: ${DEFAULT-VALUE}).")
    int port = DataPortConfig.Defaults.PORT;

    @Option(names = "--admin-port", description = "Admin HTTP port for /metrics, /health, /status and the /v1 admin API; -1 turns it off (default: ${DEFAULT-VALUE}).")
    int adminPort = AdminConfig.Defaults.PORT;

    @Option(names = "--policies", paramLabel = "FILE",
        description = "Policy file (protobuf JSON of a PolicySet). Without it only the default baseline applies.")
    Path policies;

    @Option(names = "--shards", description = "Shards, each owned by one thread: an event loop, or its own with --shard-threads (default: ${DEFAULT-VALUE}).")
    int shards = ShardConfig.Defaults.COUNT;

    @Option(names = "--raft-groups", paramLabel = "N",
        description = "Cluster: Raft groups, each with its own log and leader, spread over the members; shard s belongs to group s mod N, " +
            "so N is at most --shards. Every member must run the same N for the life of its data (default: ${DEFAULT-VALUE}).")
    int raftGroups = ClusterConfig.Defaults.RAFT_GROUPS;

    @Option(names = "--fast-linger-ms", paramLabel = "MS",
        description = "Cluster: least time between two log entries of a Raft group that carry FAST decisions only, so that light load " +
            "makes fewer, fuller entries; FAST callers never wait for it, STRICT ones skip it. 0 to 100, fractions allowed " +
            "(default: ${DEFAULT-VALUE}).")
    double fastLingerMillis = ClusterConfig.Defaults.FAST_LINGER_MICROS / 1000.0;

    @Option(names = "--snapshot-every", paramLabel = "ENTRIES",
        description = "Cluster: log entries between two snapshots of a Raft group, after which its log is purged. A snapshot copies the " +
            "group's buckets in memory on its apply thread and writes them on another; fewer entries bound the log on disk and a " +
            "restart's replay, more copy less often (default: ${DEFAULT-VALUE}).")
    long snapshotEveryEntries = ClusterConfig.Defaults.SNAPSHOT_EVERY_ENTRIES;

    @Option(names = "--election-timeout-ms", paramLabel = "MS",
        description = "Cluster: the least time a member waits without hearing from a Raft group's leader before it campaigns " +
            "(Ratis waits a random MS to 2 x MS, so a member campaigns MS to about 4 x MS after the leader's last message); the " +
            "leader's heartbeats go about MS / 2 after a follower's last reply and it decides alone for at most MS - 25 ms after " +
            "a majority last answered. Raise it where processes stall for longer than that (a shared or throttled CPU) and " +
            "leaders change without a failure; a failover then takes longer. Every member must run the same value " +
            "(./limiter status warns when they do not). 150 to 1000 (default: ${DEFAULT-VALUE}).")
    long electionTimeoutMillis = ClusterConfig.Defaults.ELECTION_TIMEOUT_MILLIS;

    @Option(names = "--memory-first",
        description = "Cluster: a member acknowledges a log entry once the operating system holds it and syncs to disk in the " +
            "background, so a commit (what a STRICT caller waits for) needs no fsync. A killed process loses nothing; a power " +
            "loss of a majority of the machines at once can lose the last committed decisions (docs/cluster.md). Every " +
            "member should run with the same setting.")
    boolean memoryFirst;

    @Option(names = "--log-format", paramLabel = "compact|classic",
        description = "Cluster: how this node writes decisions to the Raft log while it leads: compact (varint records, about a third " +
            "fewer bytes per decision) or classic (fixed-width records). Every build reads both, but builds from before the compact " +
            "layout read only classic: run classic while upgrading a cluster from one, then restart each node without it " +
            "(docs/operations.md) (default: compact).")
    ClusterConfig.LogFormat logFormat = ClusterConfig.Defaults.LOG_FORMAT;

    @Option(names = "--region", paramLabel = "NAME",
        description = "The region this node (and its whole cluster) belongs to: regional policies are decided against this region's " +
            "share of their global limit, moved toward demand with the other regions (docs/regions.md). Every member of a " +
            "cluster names the same region.")
    String region;

    @Option(names = "--region-peers", paramLabel = "REGION=HOST:PORT,...;...",
        description = "Admin addresses of the other regions' nodes (e.g. 'us=10.1.0.1:7480,10.1.0.2:7480;ap=10.2.0.1:7480'); " +
            "this region's other nodes may be listed too (their demand is then counted).")
    String regionPeers;

    @Option(names = "--region-token", paramLabel = "TOKEN",
        description = "Bearer token of the regions' exchange, the same in every region, not the admin token " +
            "(default: $LIMITER_REGION_TOKEN).")
    String regionToken;

    @Option(names = "--region-slot-ms", paramLabel = "MS",
        description = "Each region's turn to raise its shares, in turn: a region may raise every (regions x this) ms (default: ${DEFAULT-VALUE}).")
    long regionSlotMillis = RegionConfig.DEFAULT_SLOT_MILLIS;

    @Option(names = "--io-threads", description = "Netty event loops for connections (default: ${DEFAULT-VALUE}).")
    int ioThreads = DataPortConfig.Defaults.IO_THREADS;

    @Option(names = "--max-buckets-per-shard", description = "Buckets one shard holds before evicting full ones (default: ${DEFAULT-VALUE}).")
    int maxBuckets = ShardConfig.Defaults.MAX_BUCKETS_PER_SHARD;

    @Option(names = "--key-arena-bytes-per-shard", description = "Off-heap bytes for bucket keys per shard (default: ${DEFAULT-VALUE}).")
    int keyArenaBytes = ShardConfig.Defaults.KEY_ARENA_BYTES_PER_SHARD;

    @Option(names = "--max-frame-bytes", description = "Largest frame accepted; larger ones close the connection (default: ${DEFAULT-VALUE}).")
    int maxFrameBytes = DataPortConfig.Defaults.MAX_FRAME_BYTES;

    @Option(names = "--shard-threads", description = "Give each shard a dedicated thread instead of an event loop (for machines with cores to spare).")
    boolean shardThreads;

    @Option(names = "--node-id", description = "This node's id in the cluster (one of the ids in --peers).")
    String nodeId;

    @Option(names = "--peers", paramLabel = "ID=HOST:PORT,...",
        description = "Every member's data-plane address, this node included, e.g. n1=127.0.0.1:7401,n2=127.0.0.1:7402,n3=127.0.0.1:7403. Turns on replication.")
    String peers;

    @Option(names = "--raft-port-offset", description = "A member's Raft port is its data port plus this (default: ${DEFAULT-VALUE}).")
    int raftPortOffset = ClusterConfig.Defaults.RAFT_PORT_OFFSET;

    @Option(names = "--admin-token", paramLabel = "TOKEN",
        description = "Bearer token the admin API (/v1/...) requires (default: $LIMITER_ADMIN_TOKEN, else one generated into <data dir>/admin-token, readable only by its owner).")
    String adminToken;

    @Option(names = "--data-dir", paramLabel = "DIR", description = "Raft log and snapshots (default: data/<node id>).")
    Path dataDir;

    @Option(names = "--join", description = "Join a running cluster: wait to be added (./limiter cluster add) instead of campaigning.")
    boolean join;

    @Option(names = "--nio", description = "Use the NIO transport even where epoll is available.")
    boolean nio;

    @Option(names = "--io-uring", description = "Use the io_uring transport for the data and admin ports where the kernel allows it " +
        "(falls back to epoll, said at start).")
    boolean ioUring;

    @Option(names = "--tls-cert", paramLabel = "FILE",
        description = "PEM certificate chain: turns TLS on for the data, admin and Raft ports (off by default). Needs --tls-key.")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE",
        description = "PEM private key of --tls-cert, unencrypted: PKCS#8 (BEGIN PRIVATE KEY), PKCS#1 (BEGIN RSA PRIVATE KEY) or SEC1 " +
            "(BEGIN EC PRIVATE KEY).")
    Path tlsKey;

    @Option(names = "--tls-ca", paramLabel = "FILE",
        description = "PEM CA bundle: members' certificates on the Raft port must come from it (mutual TLS; required in a cluster with TLS), " +
            "and clients' too with --tls-client-auth.")
    Path tlsCa;

    @Option(names = "--tls-client-auth", paramLabel = "MODE",
        description = "Whether data and admin clients must present a certificate from --tls-ca: none, optional or require (default: none).")
    String tlsClientAuth = "none";

    @Option(names = "--tls-reload-ms", paramLabel = "MS",
        description = "How often the TLS files are checked: a changed certificate, key or CA bundle is used by new connections on every " +
            "port without a restart (files that do not load are logged and the previous ones kept); 0: read at start only " +
            "(default: ${DEFAULT-VALUE}).")
    long tlsReloadMillis = TlsConfig.Defaults.RELOAD_MILLIS;

    @Option(names = "--max-connections", description = "Data-plane connections served at once; more are refused with ERROR OVERLOADED (default: ${DEFAULT-VALUE}).")
    int maxConnections = DataPortConfig.Defaults.MAX_CONNECTIONS;

    @Option(names = "--idle-timeout-ms", description = "A data-plane connection that sends nothing for this long is closed (default: ${DEFAULT-VALUE}).")
    long idleTimeoutMillis = DataPortConfig.Defaults.IDLE_TIMEOUT_MILLIS;

    @Option(names = "--frame-timeout-ms", description = "A frame or admin HTTP request begun and not finished within this closes its connection (default: ${DEFAULT-VALUE}).")
    long frameTimeoutMillis = DataPortConfig.Defaults.FRAME_TIMEOUT_MILLIS;

    @Option(names = "--admin-max-connections", description = "Admin HTTP connections served at once; more are answered 503 (default: ${DEFAULT-VALUE}).")
    int adminMaxConnections = AdminConfig.Defaults.MAX_CONNECTIONS;

    @Option(names = "--admin-idle-timeout-ms", description = "An admin HTTP connection that sends nothing for this long is closed (default: ${DEFAULT-VALUE}).")
    long adminIdleTimeoutMillis = AdminConfig.Defaults.IDLE_TIMEOUT_MILLIS;

    /** Where settings other than flags came from (set by {@link #run}); null when the flags were parsed alone. */
    private SettingSources sources;

    /**
     * The flags as a node's settings; the records check them.
     *
     * @throws IllegalArgumentException naming the flag to change
     */
    NodeConfig nodeConfig()
    {
        final TlsClientAuth clientAuth = TlsConfig.clientAuth(tlsClientAuth);
        final String exchangeToken = regionToken != null ? regionToken : System.getenv("LIMITER_REGION_TOKEN");
        final RegionConfig regions = region == null && regionPeers == null ? null :
            RegionConfig.parse(region, regionPeers, exchangeToken, regionSlotMillis,
                RegionConfig.guardFor(regionSlotMillis));
        final Map<String, InetSocketAddress> members = peers == null ? Map.of() : RaftNodeConfig.parsePeers(peers);
        // A member's data port is the one the peers know.
        final int dataPort = nodeId != null && members.containsKey(nodeId) ? members.get(nodeId).getPort() : port;
        final long fastLingerMicros = Double.isNaN(fastLingerMillis) ? -1 : Math.round(fastLingerMillis * 1000);
        return new NodeConfig(
            new DataPortConfig(host, dataPort, ioThreads, maxFrameBytes, maxConnections, idleTimeoutMillis,
                frameTimeoutMillis, !nio, ioUring),
            new AdminConfig(adminPort, adminToken, adminMaxConnections, adminIdleTimeoutMillis),
            new ShardConfig(shards, maxBuckets, keyArenaBytes, shardThreads),
            new ClusterConfig(nodeId, members, raftGroups, raftPortOffset, join, fastLingerMicros, snapshotEveryEntries,
                electionTimeoutMillis, memoryFirst, logFormat, ClusterConfig.Defaults.LOG_SEGMENT_BYTES,
                ClusterConfig.Defaults.MAX_UNCOMMITTED_BYTES_PER_SHARD),
            new TlsConfig(tlsCert, tlsKey, tlsCa, clientAuth, tlsReloadMillis),
            regions,
            new StorageConfig(dataDir != null ? dataDir : StorageConfig.Defaults.dataDir(nodeId), policies));
    }

    @Override
    public Integer call() throws Exception
    {
        final StoreServer server;
        try
        {
            server = new StoreServer(nodeConfig());
        }
        catch (final PolicyValidationException e)
        {
            System.err.println("limiter server: the policy file was rejected:");
            e.errors().forEach(line -> System.err.println("  " + line));
            return 2;
        }
        catch (final IllegalArgumentException e)
        {
            System.err.println("limiter server: " + (sources == null ? e.getMessage() : sources.explain(e.getMessage())));
            return 2;
        }
        catch (final UncheckedIOException e)
        {
            System.err.println("limiter server: " + e.getMessage()); // a data directory it cannot use: says which and why
            return 1;
        }
        try
        {
            server.start();
        }
        catch (final Exception e)
        {
            server.close();
            if (e instanceof Listener.ListenFailure || e instanceof PeerGenerations.Incompatible)
            {
                System.err.println("limiter server: " + e.getMessage());
            }
            else
            {
                System.err.println("limiter server: cannot start: " + e);
            }
            return 1;
        }
        final CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            server.close();
            stopped.countDown();
        }, "limiter-shutdown"));
        System.out.println("limiter store listening on " + host + ":" + server.port() +
            (server.adminPort() >= 0 ? ", metrics at http://" + host + ":" + server.adminPort() + "/metrics" : "") +
            " (Ctrl-C stops it)");
        stopped.await();
        return 0;
    }

    /** {@code --version}: this build's version, commit and protocol generation. */
    static final class Version implements CommandLine.IVersionProvider
    {
        @Override
        public String[] getVersion()
        {
            return new String[] {BuildInfo.current().describe()};
        }
    }

    /**
     * The node's settings from its flags, {@code LIMITER_*} variables of {@code env} and the settings
     * file, checked: the one loader {@code ./limiter server}, its tests and the Kubernetes manifests' test use.
     *
     * @throws IllegalArgumentException naming the setting and, when it was not a flag, where it came from
     */
    static NodeConfig load(final String[] args, final Map<String, String> env)
    {
        final SettingSources sources = SettingSources.of(args, env);
        final ServerMain main = new ServerMain();
        final CommandLine command = commandLine(main, sources);
        sources.checkNames(command.getCommandSpec());
        try
        {
            command.parseArgs(args);
            return main.nodeConfig();
        }
        catch (final CommandLine.ParameterException | IllegalArgumentException e)
        {
            throw new IllegalArgumentException(sources.explain(e.getMessage()), e);
        }
    }

    private static CommandLine commandLine(final ServerMain main, final SettingSources sources)
    {
        return new CommandLine(main).setCaseInsensitiveEnumValuesAllowed(true).setDefaultValueProvider(sources);
    }

    /** Runs {@code ./limiter server} with {@code args} and the process's environment; the exit status. */
    static int run(final String[] args, final Map<String, String> env)
    {
        final SettingSources sources;
        final CommandLine command;
        try
        {
            sources = SettingSources.of(args, env);
            final ServerMain main = new ServerMain();
            main.sources = sources;
            command = commandLine(main, sources);
            sources.checkNames(command.getCommandSpec()).forEach(variable -> System.err.println("limiter server: warning: " +
                "the environment variable " + variable + " names no server option and is ignored (./limiter server --help)"));
        }
        catch (final IllegalArgumentException e)
        {
            System.err.println("limiter server: " + e.getMessage());
            return 2;
        }
        command.setParameterExceptionHandler((e, ignored) ->
        {
            System.err.println("limiter server: " + sources.explain(e.getMessage()) + " (./limiter server --help)");
            return 2;
        });
        return command.execute(args);
    }

    public static void main(final String[] args)
    {
        System.exit(run(args, System.getenv()));
    }
}
