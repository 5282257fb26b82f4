package dev.limiter.raft;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/** Settings of one {@link RaftNode}; {@link #validate()} checks them once and says what to change. */
public final class RaftNodeConfig
{
    public static final Duration DEFAULT_ELECTION_TIMEOUT_MIN = Duration.ofMillis(150);
    public static final Duration DEFAULT_ELECTION_TIMEOUT_MAX = Duration.ofMillis(300);
    /** Entries between automatic snapshots (after which the log up to the snapshot is purged). */
    public static final long DEFAULT_SNAPSHOT_EVERY_ENTRIES = 10_000;
    /** A leader that hears from no majority for this long steps down (Ratis' default is 10 s). */
    public static final long DEFAULT_LEADER_STEP_DOWN_MILLIS = 1000;
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9_-]{1,32}");

    private String nodeId;
    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private Path storageDir;
    private String groupName = "limiter";
    private Duration electionTimeoutMin = DEFAULT_ELECTION_TIMEOUT_MIN;
    private Duration electionTimeoutMax = DEFAULT_ELECTION_TIMEOUT_MAX;
    private long snapshotEveryEntries = DEFAULT_SNAPSHOT_EVERY_ENTRIES;
    private int logSegmentBytes = 1 << 20;
    private long leaderStepDownMillis = DEFAULT_LEADER_STEP_DOWN_MILLIS;
    private boolean joining;
    private int snapshotChunkBytes = 16 << 20;

    public RaftNodeConfig validate()
    {
        require(nodeId != null && ID.matcher(nodeId).matches(), "node id must match [A-Za-z0-9_-]{1,32}, was " + nodeId);
        require(peers.containsKey(nodeId), "the peers must include this node (" + nodeId + "), were " + peers.keySet());
        peers.keySet().forEach(id -> require(ID.matcher(id).matches(), "peer id must match [A-Za-z0-9_-]{1,32}, was " + id));
        require(storageDir != null, "a storage directory is required");
        require(!electionTimeoutMin.isNegative() && electionTimeoutMin.compareTo(electionTimeoutMax) < 0,
            "election timeout min must be positive and below max, were " + electionTimeoutMin + " and " + electionTimeoutMax);
        require(snapshotEveryEntries >= 1, "snapshot interval must be at least 1 entry, was " + snapshotEveryEntries);
        require(logSegmentBytes >= 1024, "log segment size must be at least 1 KiB, was " + logSegmentBytes);
        return this;
    }

    private static void require(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(message);
        }
    }

    /**
     * Parses {@code id=host:port,id=host:port,...}.
     *
     * @throws IllegalArgumentException naming the malformed part
     */
    public static Map<String, InetSocketAddress> parsePeers(final String spec)
    {
        final Map<String, InetSocketAddress> result = new LinkedHashMap<>();
        for (final String part : spec.split(","))
        {
            final String item = part.strip();
            final int eq = item.indexOf('=');
            final int colon = item.lastIndexOf(':');
            if (eq <= 0 || colon <= eq + 1 || colon == item.length() - 1)
            {
                throw new IllegalArgumentException("peer '" + item + "' is not id=host:port (e.g. n1=127.0.0.1:7501)");
            }
            final int port;
            try
            {
                port = Integer.parseInt(item.substring(colon + 1));
            }
            catch (final NumberFormatException e)
            {
                throw new IllegalArgumentException("peer '" + item + "' has a port that is not a number");
            }
            if (result.put(item.substring(0, eq), InetSocketAddress.createUnresolved(item.substring(eq + 1, colon), port)) != null)
            {
                throw new IllegalArgumentException("peer id '" + item.substring(0, eq) + "' appears twice");
            }
        }
        return result;
    }

    public String nodeId()
    {
        return nodeId;
    }

    public RaftNodeConfig nodeId(final String nodeId)
    {
        this.nodeId = nodeId;
        return this;
    }

    public Map<String, InetSocketAddress> peers()
    {
        return peers;
    }

    /** Every member of the group, this node included, by id: the address its Raft RPC listens on. */
    public RaftNodeConfig peers(final Map<String, InetSocketAddress> peers)
    {
        this.peers.clear();
        this.peers.putAll(peers);
        return this;
    }

    public Path storageDir()
    {
        return storageDir;
    }

    public RaftNodeConfig storageDir(final Path storageDir)
    {
        this.storageDir = Objects.requireNonNull(storageDir);
        return this;
    }

    public String groupName()
    {
        return groupName;
    }

    /** Name of the Raft group (one per shard); every member must use the same. */
    public RaftNodeConfig groupName(final String groupName)
    {
        this.groupName = groupName;
        return this;
    }

    public Duration electionTimeoutMin()
    {
        return electionTimeoutMin;
    }

    public Duration electionTimeoutMax()
    {
        return electionTimeoutMax;
    }

    public RaftNodeConfig electionTimeout(final Duration min, final Duration max)
    {
        this.electionTimeoutMin = min;
        this.electionTimeoutMax = max;
        return this;
    }

    public long snapshotEveryEntries()
    {
        return snapshotEveryEntries;
    }

    public RaftNodeConfig snapshotEveryEntries(final long entries)
    {
        this.snapshotEveryEntries = entries;
        return this;
    }

    public int snapshotChunkBytes()
    {
        return snapshotChunkBytes;
    }

    /** Largest piece of a snapshot sent to a follower at once (Ratis' default 16 MiB). */
    public RaftNodeConfig snapshotChunkBytes(final int bytes)
    {
        this.snapshotChunkBytes = bytes;
        return this;
    }

    public boolean joining()
    {
        return joining;
    }

    /**
     * A new member joining a running group: it does not campaign until the leader has added it
     * (a candidate the leader does not know is told to shut down).
     */
    public RaftNodeConfig joining(final boolean joining)
    {
        this.joining = joining;
        return this;
    }

    public long leaderStepDownMillis()
    {
        return leaderStepDownMillis;
    }

    public RaftNodeConfig leaderStepDownMillis(final long millis)
    {
        this.leaderStepDownMillis = millis;
        return this;
    }

    public int logSegmentBytes()
    {
        return logSegmentBytes;
    }

    /** Size of one log segment file; the log is purged a segment at a time after a snapshot. */
    public RaftNodeConfig logSegmentBytes(final int bytes)
    {
        this.logSegmentBytes = bytes;
        return this;
    }
}
