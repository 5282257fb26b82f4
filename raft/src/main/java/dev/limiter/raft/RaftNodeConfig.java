package dev.limiter.raft;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.regex.Pattern;
import javax.net.ssl.X509KeyManager;
import javax.net.ssl.X509TrustManager;

/** Settings of one {@link RaftNode}; {@link #validate()} checks them once and says what to change. */
public final class RaftNodeConfig
{
    /** Least time a follower waits without hearing from its leader before it campaigns; the most is twice it. */
    public static final Duration DEFAULT_ELECTION_TIMEOUT_MIN = Duration.ofMillis(150);
    /**
     * Largest minimum election timeout. Beyond it an idle leader's heartbeats (about half of it after
     * the last reply) would make a live member look away to the rebalancer (RaftGroupMember's one
     * second), Ratis' 3 s request timeout would fire before an election, and a failover (up to about
     * four times it) would outlast any caller's deadline.
     */
    public static final Duration MAX_ELECTION_TIMEOUT_MIN = Duration.ofSeconds(1);
    /** Entries between automatic snapshots (after which the log up to the snapshot is purged). */
    public static final long DEFAULT_SNAPSHOT_EVERY_ENTRIES = 10_000;
    /** Bytes of a log segment; only closed segments are purged after a snapshot. */
    public static final int DEFAULT_LOG_SEGMENT_BYTES = 1 << 20;
    /**
     * Least Ratis leader step-down wait (its default is 10 s): how long a member that stepped down
     * for want of a majority waits before it campaigns, and the JVM pause past which a leader steps
     * down; never less than the maximum election timeout. (Losing the majority itself is noticed
     * after the maximum RPC timeout; deciding stops sooner, when the leader lease ends:
     * {@link #leaderLeaseMillis()}.)
     */
    public static final long DEFAULT_LEADER_STEP_DOWN_MILLIS = 1000;
    /**
     * Largest round trip between members the leader lease allows for: a follower resets its
     * election timer when a heartbeat arrives, which may be this much before its reply does.
     */
    public static final long MAX_ROUND_TRIP_MILLIS = 25;
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9_-]{1,32}");
    /** Connections the Raft port serves at once (peers need a few each); more are closed. */
    public static final int DEFAULT_MAX_CONNECTIONS = 64;
    /** A Raft connection with no call in progress for this long is closed (peers reconnect at once). */
    public static final long DEFAULT_IDLE_TIMEOUT_MILLIS = 120_000;
    /** A Raft connection must send the HTTP/2 preface within this. */
    public static final long DEFAULT_PREFACE_TIMEOUT_MILLIS = 10_000;

    private String nodeId;
    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private Path storageDir;
    private String groupName = "limiter";
    private Duration electionTimeoutMin = DEFAULT_ELECTION_TIMEOUT_MIN;
    private long snapshotEveryEntries = DEFAULT_SNAPSHOT_EVERY_ENTRIES;
    private boolean memoryFirst;
    private int logSegmentBytes = DEFAULT_LOG_SEGMENT_BYTES;
    private long leaderStepDownMillis;
    private boolean joining;
    private int snapshotChunkBytes = 16 << 20;
    private X509KeyManager tlsKeys;
    private X509TrustManager tlsTrust;
    private LongSupplier tlsGeneration = () -> 0;
    private int maxConnections = DEFAULT_MAX_CONNECTIONS;
    private long idleTimeoutMillis = DEFAULT_IDLE_TIMEOUT_MILLIS;
    private long prefaceTimeoutMillis = DEFAULT_PREFACE_TIMEOUT_MILLIS;
    private Consumer<String> refusals;

    public RaftNodeConfig validate()
    {
        require(nodeId != null && ID.matcher(nodeId).matches(), "node id must match [A-Za-z0-9_-]{1,32}, was " + nodeId);
        require(peers.containsKey(nodeId), "the peers must include this node (" + nodeId + "), were " + peers.keySet());
        peers.keySet().forEach(id -> require(ID.matcher(id).matches(), "peer id must match [A-Za-z0-9_-]{1,32}, was " + id));
        require(storageDir != null, "a storage directory is required");
        require(electionTimeoutMin.toMillis() > 2 * MAX_ROUND_TRIP_MILLIS && electionTimeoutMin.compareTo(MAX_ELECTION_TIMEOUT_MIN) <= 0,
            "the minimum election timeout must be above " + 2 * MAX_ROUND_TRIP_MILLIS + " ms and at most " + MAX_ELECTION_TIMEOUT_MIN.toMillis() +
                " ms, was " + electionTimeoutMin.toMillis() + " ms");
        require(snapshotEveryEntries >= 1, "snapshot interval must be at least 1 entry, was " + snapshotEveryEntries);
        require(logSegmentBytes >= 1024, "log segment size must be at least 1 KiB, was " + logSegmentBytes);
        require(tlsKeys == null || tlsTrust != null,
            "TLS on the Raft port is mutual: it needs the certificate, its key and the CA bundle peers' certificates come from");
        require(maxConnections >= 2, "the Raft port needs at least 2 connections, was " + maxConnections);
        require(idleTimeoutMillis >= 1000, "the Raft idle timeout must be at least 1 s, was " + idleTimeoutMillis + " ms");
        require(prefaceTimeoutMillis >= 100, "the Raft preface timeout must be at least 100 ms, was " + prefaceTimeoutMillis + " ms");
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

    /**
     * Sets the least time a follower waits without hearing from its leader before it campaigns: Ratis
     * sleeps a random time from {@code min} to twice it and campaigns if nothing came for that long,
     * so a member campaigns between {@code min} and about four times it after the last message. It
     * also sets the leader's heartbeats (about {@code min / 2} after a follower's last reply) and its
     * leader lease ({@link #leaderLeaseMillis()}), which assumes that every member of the group
     * waits at least as long: every member must run the same value.
     */
    public RaftNodeConfig electionTimeoutMin(final Duration min)
    {
        this.electionTimeoutMin = Objects.requireNonNull(min, "min");
        return this;
    }

    /** The most a follower waits before it campaigns: twice {@link #electionTimeoutMin()}. */
    public Duration electionTimeoutMax()
    {
        return electionTimeoutMin.multipliedBy(2);
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

    /** Whether an entry counts as held by a member once written to its operating system, before its fsync. */
    public boolean memoryFirst()
    {
        return memoryFirst;
    }

    /**
     * Memory-first: a member acknowledges an entry once it has handed it to its operating system
     * (the page cache), and syncs the log to disk in the background, so a commit no longer waits
     * for two fsyncs (the leader's and a follower's). A process that dies loses nothing the kernel
     * holds; a machine that loses power loses the entries written since its last completed sync,
     * and a majority of machines losing power at once can lose committed entries. Off by default.
     */
    public RaftNodeConfig memoryFirst(final boolean memoryFirst)
    {
        this.memoryFirst = memoryFirst;
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

    /**
     * The leader lease, in milliseconds: how long after last hearing from a majority a leader may
     * still act alone. No other member can have been elected before then (followers wait at least
     * the minimum election timeout after the leader's last heartbeat, which reached them at most
     * {@value #MAX_ROUND_TRIP_MILLIS} ms before their reply came back).
     */
    public long leaderLeaseMillis()
    {
        return electionTimeoutMin.toMillis() - MAX_ROUND_TRIP_MILLIS;
    }

    /**
     * Ratis' leader step-down wait in milliseconds: as set, else {@value #DEFAULT_LEADER_STEP_DOWN_MILLIS}
     * or the maximum election timeout, whichever is longer (a leader that steps down after a shorter
     * pause than followers wait to campaign would leave its group without a leader in between).
     */
    public long leaderStepDownMillis()
    {
        return leaderStepDownMillis > 0 ? leaderStepDownMillis : Math.max(DEFAULT_LEADER_STEP_DOWN_MILLIS, electionTimeoutMax().toMillis());
    }

    public RaftNodeConfig leaderStepDownMillis(final long millis)
    {
        this.leaderStepDownMillis = millis;
        return this;
    }

    /**
     * Mutual TLS on the Raft port: this member presents the certificate {@code keys} holds and
     * accepts only peers whose certificates {@code trust} accepts, and its own connections to peers
     * do the same. Both null: plain TCP. The managers are asked on every handshake, so they may
     * change what they hold (rotated files); {@code generation} changes when they do, and the port
     * then takes new connections on a new TLS context, so that no session from before is resumed.
     */
    public RaftNodeConfig tls(final X509KeyManager keys, final X509TrustManager trust, final LongSupplier generation)
    {
        this.tlsKeys = keys;
        this.tlsTrust = trust;
        this.tlsGeneration = Objects.requireNonNull(generation, "generation");
        return this;
    }

    /** Whether the Raft port speaks (mutual) TLS. */
    public boolean tls()
    {
        return tlsKeys != null;
    }

    public X509KeyManager tlsKeys()
    {
        return tlsKeys;
    }

    public X509TrustManager tlsTrust()
    {
        return tlsTrust;
    }

    public LongSupplier tlsGeneration()
    {
        return tlsGeneration;
    }

    public int maxConnections()
    {
        return maxConnections;
    }

    /** Connections the Raft port serves at once (default {@value #DEFAULT_MAX_CONNECTIONS}). */
    public RaftNodeConfig maxConnections(final int maxConnections)
    {
        this.maxConnections = maxConnections;
        return this;
    }

    public long idleTimeoutMillis()
    {
        return idleTimeoutMillis;
    }

    /** A Raft connection without calls for this long is closed (default {@value #DEFAULT_IDLE_TIMEOUT_MILLIS} ms). */
    public RaftNodeConfig idleTimeoutMillis(final long millis)
    {
        this.idleTimeoutMillis = millis;
        return this;
    }

    public long prefaceTimeoutMillis()
    {
        return prefaceTimeoutMillis;
    }

    /** A Raft connection must send its HTTP/2 preface within this (default {@value #DEFAULT_PREFACE_TIMEOUT_MILLIS} ms). */
    public RaftNodeConfig prefaceTimeoutMillis(final long millis)
    {
        this.prefaceTimeoutMillis = millis;
        return this;
    }

    public Consumer<String> refusals()
    {
        return refusals;
    }

    /** Told the reason (max-connections, unfinished-message) each time the Raft port turns a connection away. */
    public RaftNodeConfig refusals(final Consumer<String> refusals)
    {
        this.refusals = refusals;
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
