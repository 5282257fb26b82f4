package dev.limiter.server;

import dev.limiter.server.net.TlsClientAuth;
import dev.limiter.server.region.RegionConfig;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Assembles a {@link NodeConfig} one setting at a time, for code that starts a node (tests,
 * embedders); {@code ./limiter server} builds the records from its flags directly. Every setting
 * starts at its group's default; {@link #build()} makes the records, which check the values.
 */
public final class ServerConfig
{
    private String host = DataPortConfig.Defaults.HOST;
    private int port = DataPortConfig.Defaults.PORT;
    private int ioThreads = DataPortConfig.Defaults.IO_THREADS;
    private int maxFrameBytes = DataPortConfig.Defaults.MAX_FRAME_BYTES;
    private int maxConnections = DataPortConfig.Defaults.MAX_CONNECTIONS;
    private long idleTimeoutMillis = DataPortConfig.Defaults.IDLE_TIMEOUT_MILLIS;
    private long frameTimeoutMillis = DataPortConfig.Defaults.FRAME_TIMEOUT_MILLIS;
    private boolean preferEpoll = true;
    private boolean preferIoUring;

    private int adminPort = AdminConfig.Defaults.PORT;
    private String adminToken;
    private int adminMaxConnections = AdminConfig.Defaults.MAX_CONNECTIONS;
    private long adminIdleTimeoutMillis = AdminConfig.Defaults.IDLE_TIMEOUT_MILLIS;

    private int shards = ShardConfig.Defaults.COUNT;
    private int maxBucketsPerShard = ShardConfig.Defaults.MAX_BUCKETS_PER_SHARD;
    private int keyArenaBytesPerShard = ShardConfig.Defaults.KEY_ARENA_BYTES_PER_SHARD;
    private boolean shardThreads;

    private String nodeId;
    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private int raftGroups = ClusterConfig.Defaults.RAFT_GROUPS;
    private int raftPortOffset = ClusterConfig.Defaults.RAFT_PORT_OFFSET;
    private boolean joining;
    private long fastLingerMicros = ClusterConfig.Defaults.FAST_LINGER_MICROS;
    private long snapshotEveryEntries = ClusterConfig.Defaults.SNAPSHOT_EVERY_ENTRIES;
    private long electionTimeoutMillis = ClusterConfig.Defaults.ELECTION_TIMEOUT_MILLIS;
    private boolean memoryFirst;
    private ClusterConfig.LogFormat logFormat = ClusterConfig.Defaults.LOG_FORMAT;
    private int logSegmentBytes = ClusterConfig.Defaults.LOG_SEGMENT_BYTES;
    private int maxUncommittedBytesPerShard = ClusterConfig.Defaults.MAX_UNCOMMITTED_BYTES_PER_SHARD;

    private Path tlsCert;
    private Path tlsKey;
    private Path tlsCa;
    private TlsClientAuth tlsClientAuth = TlsConfig.Defaults.CLIENT_AUTH;
    private long tlsReloadMillis = TlsConfig.Defaults.RELOAD_MILLIS;

    private RegionConfig region;

    private Path dataDir;
    private Path policiesFile;

    /**
     * The settings as records.
     *
     * @throws IllegalArgumentException naming the first setting out of range and what it accepts
     */
    public NodeConfig build()
    {
        return new NodeConfig(
            new DataPortConfig(host, port, ioThreads, maxFrameBytes, maxConnections, idleTimeoutMillis,
                frameTimeoutMillis, preferEpoll, preferIoUring),
            new AdminConfig(adminPort, adminToken, adminMaxConnections, adminIdleTimeoutMillis),
            new ShardConfig(shards, maxBucketsPerShard, keyArenaBytesPerShard, shardThreads),
            new ClusterConfig(nodeId, peers, raftGroups, raftPortOffset, joining, fastLingerMicros,
                snapshotEveryEntries, electionTimeoutMillis, memoryFirst, logFormat, logSegmentBytes,
                maxUncommittedBytesPerShard),
            new TlsConfig(tlsCert, tlsKey, tlsCa, tlsClientAuth, tlsReloadMillis),
            region,
            new StorageConfig(dataDir != null ? dataDir : StorageConfig.Defaults.dataDir(nodeId), policiesFile));
    }

    // Data port (DataPortConfig)

    public ServerConfig host(final String host)
    {
        this.host = host;
        return this;
    }

    /** Data-plane port; 0 picks a free one (see {@link StoreServer#port()}). */
    public ServerConfig port(final int port)
    {
        this.port = port;
        return this;
    }

    public ServerConfig ioThreads(final int ioThreads)
    {
        this.ioThreads = ioThreads;
        return this;
    }

    public ServerConfig maxFrameBytes(final int maxFrameBytes)
    {
        this.maxFrameBytes = maxFrameBytes;
        return this;
    }

    public ServerConfig maxConnections(final int maxConnections)
    {
        this.maxConnections = maxConnections;
        return this;
    }

    public ServerConfig idleTimeoutMillis(final long millis)
    {
        this.idleTimeoutMillis = millis;
        return this;
    }

    public ServerConfig frameTimeoutMillis(final long millis)
    {
        this.frameTimeoutMillis = millis;
        return this;
    }

    public ServerConfig preferEpoll(final boolean preferEpoll)
    {
        this.preferEpoll = preferEpoll;
        return this;
    }

    public ServerConfig preferIoUring(final boolean preferIoUring)
    {
        this.preferIoUring = preferIoUring;
        return this;
    }

    // Admin port (AdminConfig)

    /** Admin HTTP port; 0 picks a free one, -1 turns it off. */
    public ServerConfig adminPort(final int adminPort)
    {
        this.adminPort = adminPort;
        return this;
    }

    public ServerConfig adminToken(final String token)
    {
        this.adminToken = token;
        return this;
    }

    public ServerConfig adminMaxConnections(final int adminMaxConnections)
    {
        this.adminMaxConnections = adminMaxConnections;
        return this;
    }

    public ServerConfig adminIdleTimeoutMillis(final long millis)
    {
        this.adminIdleTimeoutMillis = millis;
        return this;
    }

    // Shards (ShardConfig)

    public ServerConfig shards(final int shards)
    {
        this.shards = shards;
        return this;
    }

    public ServerConfig maxBucketsPerShard(final int maxBucketsPerShard)
    {
        this.maxBucketsPerShard = maxBucketsPerShard;
        return this;
    }

    public ServerConfig keyArenaBytesPerShard(final int keyArenaBytesPerShard)
    {
        this.keyArenaBytesPerShard = keyArenaBytesPerShard;
        return this;
    }

    public ServerConfig shardThreads(final boolean shardThreads)
    {
        this.shardThreads = shardThreads;
        return this;
    }

    // Cluster (ClusterConfig)

    public ServerConfig nodeId(final String nodeId)
    {
        this.nodeId = nodeId;
        return this;
    }

    /** Every member's data-plane address by node id, this node included: makes the node a cluster member. */
    public ServerConfig peers(final Map<String, InetSocketAddress> peers)
    {
        this.peers.clear();
        this.peers.putAll(peers);
        return this;
    }

    public ServerConfig raftGroups(final int raftGroups)
    {
        this.raftGroups = raftGroups;
        return this;
    }

    public ServerConfig raftPortOffset(final int offset)
    {
        this.raftPortOffset = offset;
        return this;
    }

    public ServerConfig joining(final boolean joining)
    {
        this.joining = joining;
        return this;
    }

    public ServerConfig fastLingerMicros(final long fastLingerMicros)
    {
        this.fastLingerMicros = fastLingerMicros;
        return this;
    }

    /** Drills take snapshots often, so that a member that was away catches up by one. */
    public ServerConfig snapshotEveryEntries(final long entries)
    {
        this.snapshotEveryEntries = entries;
        return this;
    }

    public ServerConfig electionTimeoutMillis(final long millis)
    {
        this.electionTimeoutMillis = millis;
        return this;
    }

    public ServerConfig memoryFirst(final boolean memoryFirst)
    {
        this.memoryFirst = memoryFirst;
        return this;
    }

    public ServerConfig logFormat(final ClusterConfig.LogFormat format)
    {
        this.logFormat = format;
        return this;
    }

    /** Drills use small segments, so that a snapshot lets the log be purged past an absent member. */
    public ServerConfig logSegmentBytes(final int bytes)
    {
        this.logSegmentBytes = bytes;
        return this;
    }

    /** Tests set it tiny to make a shard fall behind on purpose. */
    public ServerConfig maxUncommittedBytesPerShard(final int bytes)
    {
        this.maxUncommittedBytesPerShard = bytes;
        return this;
    }

    // TLS (TlsConfig)

    public ServerConfig tlsCert(final Path file)
    {
        this.tlsCert = file;
        return this;
    }

    public ServerConfig tlsKey(final Path file)
    {
        this.tlsKey = file;
        return this;
    }

    public ServerConfig tlsCa(final Path file)
    {
        this.tlsCa = file;
        return this;
    }

    public ServerConfig tlsClientAuth(final TlsClientAuth mode)
    {
        this.tlsClientAuth = mode;
        return this;
    }

    public ServerConfig tlsReloadMillis(final long millis)
    {
        this.tlsReloadMillis = millis;
        return this;
    }

    // Regions (RegionConfig)

    public ServerConfig region(final RegionConfig region)
    {
        this.region = region;
        return this;
    }

    // Storage (StorageConfig)

    /** Default {@code data/<node id>}. */
    public ServerConfig dataDir(final Path dataDir)
    {
        this.dataDir = dataDir;
        return this;
    }

    public ServerConfig policiesFile(final Path policiesFile)
    {
        this.policiesFile = policiesFile;
        return this;
    }
}
