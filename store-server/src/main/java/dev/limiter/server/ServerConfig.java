package dev.limiter.server;

import dev.limiter.protocol.Frame;
import dev.limiter.protocol.ReloadingTls;
import dev.limiter.server.region.RegionConfig;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.net.TlsClientAuth;
import dev.limiter.server.table.BucketTable;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A node's settings. Every default is written here, with its unit in the name; {@link #validate()}
 * checks them all once and says what to change.
 */
public final class ServerConfig
{
    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final int DEFAULT_PORT = 7400;
    public static final int DEFAULT_ADMIN_PORT = 7480;
    /**
     * Default event loops and shards: one per two cores, at least 1. Each shard is owned by one
     * event loop, so a frame whose keys live on its connection's loop is decided with no hand-off;
     * the other half of the cores is left to the clients and the OS.
     */
    public static final int DEFAULT_IO_THREADS = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
    public static final int DEFAULT_SHARDS = DEFAULT_IO_THREADS;
    /** 2^20 slots of 32 bytes (32 MiB) per shard at the 0.7 load factor. */
    public static final int DEFAULT_MAX_BUCKETS_PER_SHARD = 734_003;
    /** Average 32 bytes of key per bucket. */
    public static final int DEFAULT_KEY_ARENA_BYTES_PER_SHARD = DEFAULT_MAX_BUCKETS_PER_SHARD * 32;

    /** A member's Raft port is its data port plus this. */
    public static final int DEFAULT_RAFT_PORT_OFFSET = 100;

    /**
     * Least time, in microseconds, between a Raft group's log entries that carry FAST decisions
     * only: at light load, fewer and fuller entries for the same decisions (a FAST caller does not
     * wait for its entry). Replication costs the members CPU per entry, not per decision, so a
     * linger of several light-load decision intervals cuts that cost, and an answer does not queue
     * behind the replication of the entry before it (docs/notes/2026-12-05-a-longer-fast-linger.md
     * has the measurements behind the 20 ms default).
     */
    public static final long DEFAULT_FAST_LINGER_MICROS = 20_000;
    /** The longest FAST linger accepted, in microseconds: beyond it the uncommitted window grows for little. */
    public static final long MAX_FAST_LINGER_MICROS = 100_000;

    /** Data-plane connections served at once; more are refused with ERROR OVERLOADED. */
    public static final int DEFAULT_MAX_CONNECTIONS = 10_000;
    /** Bytes of decisions a shard may have handed to its log uncommitted (2 MiB) before it answers OVERLOADED. */
    public static final int DEFAULT_MAX_UNCOMMITTED_BYTES_PER_SHARD = 2 * 1024 * 1024;
    /** A data-plane connection that sends nothing for this long is closed (SDKs ping well within it). */
    public static final long DEFAULT_IDLE_TIMEOUT_MILLIS = 120_000;
    /** A frame (or an admin HTTP request) begun and not finished within this closes its connection. */
    public static final long DEFAULT_FRAME_TIMEOUT_MILLIS = 10_000;
    /** Admin HTTP connections served at once; more are answered 503. */
    public static final int DEFAULT_ADMIN_MAX_CONNECTIONS = 64;
    /** An admin HTTP connection that sends nothing for this long is closed. */
    public static final long DEFAULT_ADMIN_IDLE_TIMEOUT_MILLIS = 60_000;
    /** How often the TLS files are checked for a new certificate, key or CA bundle (0: never). */
    public static final long DEFAULT_TLS_RELOAD_MILLIS = ReloadingTls.DEFAULT_CHECK_EVERY.toMillis();

    private String host = DEFAULT_HOST;
    private int port = DEFAULT_PORT;
    private int adminPort = DEFAULT_ADMIN_PORT;
    private Path policiesFile;
    private int shards = DEFAULT_SHARDS;
    private int raftGroups = 1;
    private long fastLingerMicros = DEFAULT_FAST_LINGER_MICROS;
    private RegionConfig region;
    private long snapshotEveryEntries = RaftNodeConfig.DEFAULT_SNAPSHOT_EVERY_ENTRIES;
    private int maxUncommittedBytesPerShard = DEFAULT_MAX_UNCOMMITTED_BYTES_PER_SHARD;
    private boolean memoryFirst;
    private long electionTimeoutMillis = RaftNodeConfig.DEFAULT_ELECTION_TIMEOUT_MIN.toMillis();
    private LogFormat logFormat = LogFormat.COMPACT;
    private int logSegmentBytes = RaftNodeConfig.DEFAULT_LOG_SEGMENT_BYTES;
    private int ioThreads = DEFAULT_IO_THREADS;
    private int maxBucketsPerShard = DEFAULT_MAX_BUCKETS_PER_SHARD;
    private int keyArenaBytesPerShard = DEFAULT_KEY_ARENA_BYTES_PER_SHARD;
    private int maxFrameBytes = Frame.DEFAULT_MAX_FRAME_BYTES;
    private boolean preferEpoll = true;
    private boolean preferIoUring;
    private boolean shardThreads;
    private String nodeId;
    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private int raftPortOffset = DEFAULT_RAFT_PORT_OFFSET;
    private Path dataDir;
    private String adminToken;
    private boolean joining;
    private int maxConnections = DEFAULT_MAX_CONNECTIONS;
    private long idleTimeoutMillis = DEFAULT_IDLE_TIMEOUT_MILLIS;
    private long frameTimeoutMillis = DEFAULT_FRAME_TIMEOUT_MILLIS;
    private int adminMaxConnections = DEFAULT_ADMIN_MAX_CONNECTIONS;
    private long adminIdleTimeoutMillis = DEFAULT_ADMIN_IDLE_TIMEOUT_MILLIS;
    private Path tlsCert;
    private Path tlsKey;
    private Path tlsCa;
    private TlsClientAuth tlsClientAuth = TlsClientAuth.NONE;
    private long tlsReloadMillis = DEFAULT_TLS_RELOAD_MILLIS;

    /** Checks every setting; throws naming the setting, its value and the accepted range. */
    public ServerConfig validate()
    {
        require(host != null && !host.isBlank(), "host must not be empty");
        require(port >= 0 && port <= 65535, "port must be 0 (any free port) to 65535, was " + port);
        require(adminPort >= -1 && adminPort <= 65535, "admin port must be -1 (off), 0 (any free port) or up to 65535, was " + adminPort);
        require(shards >= 1 && shards <= 64, "shards must be 1 to 64, was " + shards);
        require(ioThreads >= 1 && ioThreads <= 256, "io threads must be 1 to 256, was " + ioThreads);
        require(!(preferIoUring && !preferEpoll), "--io-uring and --nio ask for two different transports: keep one of them");
        require(maxBucketsPerShard >= 1 && maxBucketsPerShard <= BucketTable.MAX_BUCKETS,
            "max buckets per shard must be 1 to " + BucketTable.MAX_BUCKETS + " (use more shards beyond that), was " + maxBucketsPerShard);
        require(keyArenaBytesPerShard >= BucketTable.MAX_KEY_LENGTH,
            "key arena bytes per shard must be at least " + BucketTable.MAX_KEY_LENGTH + ", was " + keyArenaBytesPerShard);
        require(maxFrameBytes >= 1024 && maxFrameBytes <= 64 << 20,
            "max frame bytes must be 1024 to 64 MiB, was " + maxFrameBytes);
        require(fastLingerMicros >= 0 && fastLingerMicros <= MAX_FAST_LINGER_MICROS,
            "--fast-linger-ms must be 0 to " + MAX_FAST_LINGER_MICROS / 1000 + " ms, was " + fastLingerMicros / 1000.0 + " ms");
        require(maxConnections >= 1 && maxConnections <= 1_000_000, "max connections must be 1 to 1000000, was " + maxConnections);
        require(adminMaxConnections >= 1 && adminMaxConnections <= 10_000,
            "admin max connections must be 1 to 10000, was " + adminMaxConnections);
        require(idleTimeoutMillis >= 100 && idleTimeoutMillis <= 86_400_000L,
            "idle timeout must be 100 ms to 1 day, was " + idleTimeoutMillis + " ms");
        require(adminIdleTimeoutMillis >= 100 && adminIdleTimeoutMillis <= 86_400_000L,
            "admin idle timeout must be 100 ms to 1 day, was " + adminIdleTimeoutMillis + " ms");
        require(frameTimeoutMillis >= 100 && frameTimeoutMillis <= 600_000,
            "frame timeout must be 100 ms to 10 minutes, was " + frameTimeoutMillis + " ms");
        require((tlsCert == null) == (tlsKey == null), "--tls-cert and --tls-key go together: the certificate and its private key");
        require(tlsCa == null || tlsCert != null, "--tls-ca needs --tls-cert and --tls-key: TLS is on only with a certificate");
        require(tlsClientAuth == TlsClientAuth.NONE || tlsCa != null,
            "--tls-client-auth " + tlsClientAuth.name().toLowerCase(Locale.ROOT) + " needs --tls-ca: the CAs client certificates must come from");
        for (final Path file : new Path[] {tlsCert, tlsKey, tlsCa})
        {
            require(file == null || Files.isReadable(file), "TLS file " + file + " does not exist or is not readable");
        }
        require(tlsReloadMillis == 0 || tlsReloadMillis >= ReloadingTls.MIN_CHECK_EVERY.toMillis() && tlsReloadMillis <= 86_400_000L,
            "--tls-reload-ms must be 0 (never) or " + ReloadingTls.MIN_CHECK_EVERY.toMillis() + " ms to 1 day, was " + tlsReloadMillis + " ms");
        require(!clustered() || tlsCert == null || tlsCa != null,
            "a cluster with TLS needs --tls-ca: members verify each other's certificates on the Raft port (mutual TLS)");
        require(clustered() || !memoryFirst,
            "--memory-first sets how a cluster's Raft log is synced: give --node-id and --peers, or leave it out on a single node");
        if (clustered())
        {
            require(nodeId != null && peers.containsKey(nodeId),
                "--node-id must be one of the ids in --peers (" + peers.keySet() + "), was " + nodeId);
            require(!shardThreads, "--shard-threads is not supported in a cluster: shards live on the event loops");
            require(raftGroups >= 1 && raftGroups <= shards,
                "--raft-groups must be 1 to --shards (" + shards + "): each group owns at least one shard; was " + raftGroups);
            require(raftPortOffset > 0 && raftPortOffset < 10000, "raft port offset must be 1 to 9999, was " + raftPortOffset);
            require(snapshotEveryEntries >= 1, "--snapshot-every must be at least 1 log entry, was " + snapshotEveryEntries);
            require(electionTimeoutMillis >= RaftNodeConfig.DEFAULT_ELECTION_TIMEOUT_MIN.toMillis() &&
                    electionTimeoutMillis <= RaftNodeConfig.MAX_ELECTION_TIMEOUT_MIN.toMillis(),
                "--election-timeout-ms must be " + RaftNodeConfig.DEFAULT_ELECTION_TIMEOUT_MIN.toMillis() + " (the default) to " +
                    RaftNodeConfig.MAX_ELECTION_TIMEOUT_MIN.toMillis() + " ms, was " + electionTimeoutMillis);
            require(maxUncommittedBytesPerShard >= 1, "a shard's uncommitted bytes bound must be at least 1, was " + maxUncommittedBytesPerShard);
            require(logSegmentBytes >= 1024, "a Raft log segment must be at least 1 KiB, was " + logSegmentBytes + " bytes");
            for (final Map.Entry<String, InetSocketAddress> peer : peers.entrySet())
            {
                require(peer.getValue().getPort() + raftPortOffset <= 65535,
                    "peer " + peer.getKey() + ": port " + peer.getValue().getPort() + " + raft offset " + raftPortOffset + " exceeds 65535");
            }
        }
        else
        {
            require(nodeId == null, "--node-id needs --peers (the members of the cluster, this node included)");
            require(raftGroups == 1, "--raft-groups needs --peers: a single node replicates nothing");
            require(electionTimeoutMillis == RaftNodeConfig.DEFAULT_ELECTION_TIMEOUT_MIN.toMillis(),
                "--election-timeout-ms needs --peers: a single node holds no elections");
        }
        return this;
    }

    private static void require(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(message);
        }
    }

    public String host()
    {
        return host;
    }

    public ServerConfig host(final String host)
    {
        this.host = host;
        return this;
    }

    public int port()
    {
        return port;
    }

    /** Data-plane port; 0 picks a free one (see {@link StoreServer#port()}). */
    public ServerConfig port(final int port)
    {
        this.port = port;
        return this;
    }

    public int adminPort()
    {
        return adminPort;
    }

    /** Admin HTTP port (/metrics, /health); 0 picks a free one, -1 turns it off. */
    public ServerConfig adminPort(final int adminPort)
    {
        this.adminPort = adminPort;
        return this;
    }

    public Path policiesFile()
    {
        return policiesFile;
    }

    /** Policy file (protobuf JSON of a PolicySet); null serves only the default baseline. */
    public ServerConfig policiesFile(final Path policiesFile)
    {
        this.policiesFile = policiesFile;
        return this;
    }

    public int shards()
    {
        return shards;
    }

    public ServerConfig shards(final int shards)
    {
        this.shards = shards;
        return this;
    }

    /** Raft groups in a cluster: shard s belongs to group s mod groups (1, the default: one group for every shard). */
    public int raftGroups()
    {
        return raftGroups;
    }

    /** Least time, in microseconds, between a Raft group's log entries that carry FAST decisions only (0: none). */
    public long fastLingerMicros()
    {
        return fastLingerMicros;
    }

    public ServerConfig fastLingerMicros(final long fastLingerMicros)
    {
        this.fastLingerMicros = fastLingerMicros;
        return this;
    }

    /** The region this node belongs to and how it reaches the others, or null (no regions: regional policies are whole). */
    public RegionConfig region()
    {
        return region;
    }

    public ServerConfig region(final RegionConfig region)
    {
        this.region = region;
        return this;
    }

    public ServerConfig raftGroups(final int raftGroups)
    {
        this.raftGroups = raftGroups;
        return this;
    }

    public int ioThreads()
    {
        return ioThreads;
    }

    public ServerConfig ioThreads(final int ioThreads)
    {
        this.ioThreads = ioThreads;
        return this;
    }

    public int maxBucketsPerShard()
    {
        return maxBucketsPerShard;
    }

    public ServerConfig maxBucketsPerShard(final int maxBucketsPerShard)
    {
        this.maxBucketsPerShard = maxBucketsPerShard;
        return this;
    }

    public int keyArenaBytesPerShard()
    {
        return keyArenaBytesPerShard;
    }

    public ServerConfig keyArenaBytesPerShard(final int keyArenaBytesPerShard)
    {
        this.keyArenaBytesPerShard = keyArenaBytesPerShard;
        return this;
    }

    public int maxFrameBytes()
    {
        return maxFrameBytes;
    }

    public ServerConfig maxFrameBytes(final int maxFrameBytes)
    {
        this.maxFrameBytes = maxFrameBytes;
        return this;
    }

    /** Whether this node is a member of a replicated cluster (peers given). */
    public boolean clustered()
    {
        return !peers.isEmpty();
    }

    public String nodeId()
    {
        return nodeId;
    }

    public ServerConfig nodeId(final String nodeId)
    {
        this.nodeId = nodeId;
        return this;
    }

    /** Every member's data-plane address by node id, this node included. */
    public Map<String, InetSocketAddress> peers()
    {
        return peers;
    }

    public ServerConfig peers(final Map<String, InetSocketAddress> peers)
    {
        this.peers.clear();
        this.peers.putAll(peers);
        return this;
    }

    public int raftPortOffset()
    {
        return raftPortOffset;
    }

    public ServerConfig raftPortOffset(final int offset)
    {
        this.raftPortOffset = offset;
        return this;
    }

    /** Where the Raft log and snapshots live (default {@code data/<node id>}). */
    public Path dataDir()
    {
        return dataDir != null ? dataDir : Path.of("data", nodeId == null ? "node" : nodeId);
    }

    public ServerConfig dataDir(final Path dataDir)
    {
        this.dataDir = dataDir;
        return this;
    }

    /** Bearer token of the admin API; null: the environment's LIMITER_ADMIN_TOKEN, else one generated in the data directory. */
    public String adminToken()
    {
        return adminToken;
    }

    public ServerConfig adminToken(final String token)
    {
        this.adminToken = token;
        return this;
    }

    public boolean joining()
    {
        return joining;
    }

    /** This node joins a running cluster and waits to be added ({@code ./limiter cluster add}). */
    public ServerConfig joining(final boolean joining)
    {
        this.joining = joining;
        return this;
    }

    /** Bytes of decisions a shard may have handed to its log and not seen committed; beyond, frames are answered OVERLOADED. */
    public int maxUncommittedBytesPerShard()
    {
        return maxUncommittedBytesPerShard;
    }

    /** Bounds the memory a slow log may hold per shard; tests set it tiny to make a shard fall behind on purpose. */
    public ServerConfig maxUncommittedBytesPerShard(final int bytes)
    {
        this.maxUncommittedBytesPerShard = bytes;
        return this;
    }

    /** Log entries between a Raft group's snapshots (each group counts its own). */
    public long snapshotEveryEntries()
    {
        return snapshotEveryEntries;
    }

    /** Drills take snapshots often, so that a member that was away catches up by one. */
    public ServerConfig snapshotEveryEntries(final long entries)
    {
        this.snapshotEveryEntries = entries;
        return this;
    }

    /**
     * The least time in milliseconds a member waits without hearing from a group's leader before it
     * campaigns (the most is twice it); the leader lease is 25 ms shorter
     * ({@link RaftNodeConfig#electionTimeoutMin(java.time.Duration)}). Every member must run the same value.
     */
    public long electionTimeoutMillis()
    {
        return electionTimeoutMillis;
    }

    public ServerConfig electionTimeoutMillis(final long millis)
    {
        this.electionTimeoutMillis = millis;
        return this;
    }

    /** Whether the Raft log acknowledges entries once in the page cache, syncing in the background ({@link RaftNodeConfig#memoryFirst(boolean)}). */
    public boolean memoryFirst()
    {
        return memoryFirst;
    }

    public ServerConfig memoryFirst(final boolean memoryFirst)
    {
        this.memoryFirst = memoryFirst;
        return this;
    }

    /** How a leader writes the decisions it sends to the log ({@code DecisionsEntry}); every build reads both. */
    public enum LogFormat
    {
        /** Varint records, about a third fewer bytes per decision (the default). */
        COMPACT,
        /** Fixed-width records, all that builds before the compact layout can read: for a rolling upgrade from one. */
        CLASSIC
    }

    /** How this node writes decisions to the log while it leads a group. */
    public LogFormat logFormat()
    {
        return logFormat;
    }

    public ServerConfig logFormat(final LogFormat format)
    {
        this.logFormat = java.util.Objects.requireNonNull(format, "logFormat");
        return this;
    }

    /** Bytes of a Raft log segment; only closed segments are purged after a snapshot. */
    public int logSegmentBytes()
    {
        return logSegmentBytes;
    }

    /** Drills use small segments, so that a snapshot lets the log be purged past an absent member. */
    public ServerConfig logSegmentBytes(final int bytes)
    {
        this.logSegmentBytes = bytes;
        return this;
    }

    public int maxConnections()
    {
        return maxConnections;
    }

    /** Data-plane connections served at once (default {@value #DEFAULT_MAX_CONNECTIONS}); more are refused. */
    public ServerConfig maxConnections(final int maxConnections)
    {
        this.maxConnections = maxConnections;
        return this;
    }

    public long idleTimeoutMillis()
    {
        return idleTimeoutMillis;
    }

    /** A data-plane connection silent this long is closed (default {@value #DEFAULT_IDLE_TIMEOUT_MILLIS} ms). */
    public ServerConfig idleTimeoutMillis(final long millis)
    {
        this.idleTimeoutMillis = millis;
        return this;
    }

    public long frameTimeoutMillis()
    {
        return frameTimeoutMillis;
    }

    /**
     * A frame or admin request begun and not finished within this closes its connection (default
     * {@value #DEFAULT_FRAME_TIMEOUT_MILLIS} ms).
     */
    public ServerConfig frameTimeoutMillis(final long millis)
    {
        this.frameTimeoutMillis = millis;
        return this;
    }

    public int adminMaxConnections()
    {
        return adminMaxConnections;
    }

    /** Admin HTTP connections served at once (default {@value #DEFAULT_ADMIN_MAX_CONNECTIONS}); more get 503. */
    public ServerConfig adminMaxConnections(final int adminMaxConnections)
    {
        this.adminMaxConnections = adminMaxConnections;
        return this;
    }

    public long adminIdleTimeoutMillis()
    {
        return adminIdleTimeoutMillis;
    }

    /** An admin connection silent this long is closed (default {@value #DEFAULT_ADMIN_IDLE_TIMEOUT_MILLIS} ms). */
    public ServerConfig adminIdleTimeoutMillis(final long millis)
    {
        this.adminIdleTimeoutMillis = millis;
        return this;
    }

    public Path tlsCert()
    {
        return tlsCert;
    }

    /**
     * PEM certificate chain this node presents on every port (data, admin, Raft); null (the
     * default) serves plain TCP. Needs {@link #tlsKey}.
     */
    public ServerConfig tlsCert(final Path file)
    {
        this.tlsCert = file;
        return this;
    }

    public Path tlsKey()
    {
        return tlsKey;
    }

    /** PEM private key of {@link #tlsCert}: PKCS#8, PKCS#1 (RSA) or SEC1 (EC), unencrypted. */
    public ServerConfig tlsKey(final Path file)
    {
        this.tlsKey = file;
        return this;
    }

    public Path tlsCa()
    {
        return tlsCa;
    }

    /**
     * PEM CA bundle: members' certificates on the Raft port must come from it (always mutual), and
     * so must clients' on the data and admin ports when {@link #tlsClientAuth} asks for them.
     */
    public ServerConfig tlsCa(final Path file)
    {
        this.tlsCa = file;
        return this;
    }

    public TlsClientAuth tlsClientAuth()
    {
        return tlsClientAuth;
    }

    /** Whether data and admin clients must present a certificate (default NONE). */
    public ServerConfig tlsClientAuth(final TlsClientAuth mode)
    {
        this.tlsClientAuth = mode;
        return this;
    }

    public long tlsReloadMillis()
    {
        return tlsReloadMillis;
    }

    /** How often the TLS files are checked for changes, in ms; 0: read at start only. */
    public ServerConfig tlsReloadMillis(final long millis)
    {
        this.tlsReloadMillis = millis;
        return this;
    }

    /** Whether TLS is on. */
    public boolean tls()
    {
        return tlsCert != null;
    }

    public boolean shardThreads()
    {
        return shardThreads;
    }

    /** Give every shard a dedicated thread instead of an event loop (default false). */
    public ServerConfig shardThreads(final boolean shardThreads)
    {
        this.shardThreads = shardThreads;
        return this;
    }

    public boolean preferEpoll()
    {
        return preferEpoll;
    }

    /** Use epoll when the native transport loads (default); false forces NIO. */
    public ServerConfig preferEpoll(final boolean preferEpoll)
    {
        this.preferEpoll = preferEpoll;
        return this;
    }

    public boolean preferIoUring()
    {
        return preferIoUring;
    }

    /**
     * Use io_uring for the data and admin ports when the kernel allows it (default false: epoll);
     * one submission per event-loop turn instead of a read and a write system call per frame.
     */
    public ServerConfig preferIoUring(final boolean preferIoUring)
    {
        this.preferIoUring = preferIoUring;
        return this;
    }
}
