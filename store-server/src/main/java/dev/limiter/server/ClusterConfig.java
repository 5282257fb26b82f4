package dev.limiter.server;

import dev.limiter.raft.RaftNodeConfig;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Replication: this node's id, the members, the Raft groups and how their logs are written. With no
 * peers the node is a single node, and every setting here must be left at its default (each says
 * which flag it needs otherwise). {@link #raftNodeConfig} builds the Raft settings from these.
 *
 * @param nodeId                      this node's id, one of the peers' (null on a single node)
 * @param peers                       every member's data-plane address by node id, this node included; empty on
 *                                    a single node
 * @param raftGroups                  Raft groups: shard s belongs to group s mod groups
 * @param raftPortOffset              a member's Raft port is its data port plus this
 * @param joining                     this node joins a running cluster and waits to be added
 * @param fastLingerMicros            least time between a Raft group's log entries that carry FAST decisions only,
 *                                    µs (0: none)
 * @param snapshotEveryEntries        log entries between a Raft group's snapshots (each group counts its own)
 * @param electionTimeoutMillis       least time a member waits without hearing from a group's leader before it
 *                                    campaigns, ms; every member must run the same value
 * @param memoryFirst                 the log acknowledges entries once in the page cache, syncing in the background
 * @param logFormat                   how this node writes decisions to the log while it leads a group
 * @param logSegmentBytes             bytes of a Raft log segment; only closed segments are purged after a snapshot
 * @param maxUncommittedBytesPerShard bytes of decisions a shard may have handed to its log and not seen committed;
 *                                    beyond, frames are answered OVERLOADED
 */
public record ClusterConfig(
    String nodeId,
    Map<String, InetSocketAddress> peers,
    int raftGroups,
    int raftPortOffset,
    boolean joining,
    long fastLingerMicros,
    long snapshotEveryEntries,
    long electionTimeoutMillis,
    boolean memoryFirst,
    LogFormat logFormat,
    int logSegmentBytes,
    int maxUncommittedBytesPerShard)
{
    /** Replication's defaults, with their units in their names. */
    public static final class Defaults
    {
        public static final int RAFT_GROUPS = 1;
        public static final int RAFT_PORT_OFFSET = 100;
        /**
         * At light load, fewer and fuller entries for the same decisions (a FAST caller does not wait
         * for its entry): replication costs the members CPU per entry, not per decision, and an answer
         * does not queue behind the replication of the entry before it
         * (docs/notes/2026-12-05-a-longer-fast-linger.md).
         */
        public static final long FAST_LINGER_MICROS = 20_000;
        /** The longest FAST linger accepted: beyond it the uncommitted window grows for little. */
        public static final long MAX_FAST_LINGER_MICROS = 100_000;
        public static final long SNAPSHOT_EVERY_ENTRIES = RaftNodeConfig.DEFAULT_SNAPSHOT_EVERY_ENTRIES;
        public static final long ELECTION_TIMEOUT_MILLIS = RaftNodeConfig.DEFAULT_ELECTION_TIMEOUT_MIN.toMillis();
        public static final long MAX_ELECTION_TIMEOUT_MILLIS = RaftNodeConfig.MAX_ELECTION_TIMEOUT_MIN.toMillis();
        public static final LogFormat LOG_FORMAT = LogFormat.COMPACT;
        public static final int LOG_SEGMENT_BYTES = RaftNodeConfig.DEFAULT_LOG_SEGMENT_BYTES;
        /** 2 MiB of decisions handed to the log uncommitted, per shard, before it answers OVERLOADED. */
        public static final int MAX_UNCOMMITTED_BYTES_PER_SHARD = 2 * 1024 * 1024;
        /** Every group has this name in Ratis; every member must use the same. */
        public static final String GROUP_NAME = "buckets";

        private Defaults()
        {
        }
    }

    /** How a leader writes the decisions it sends to the log ({@code DecisionsEntry}); every build reads both. */
    public enum LogFormat
    {
        /** Varint records, about a third fewer bytes per decision (the default). */
        COMPACT,
        /** Fixed-width records, all that builds before the compact layout can read: for a rolling upgrade from one. */
        CLASSIC
    }

    /** A single node: no peers, every other setting at its default. */
    public static final ClusterConfig SINGLE_NODE = new ClusterConfig(null, Map.of(), Defaults.RAFT_GROUPS,
        Defaults.RAFT_PORT_OFFSET, false, Defaults.FAST_LINGER_MICROS, Defaults.SNAPSHOT_EVERY_ENTRIES,
        Defaults.ELECTION_TIMEOUT_MILLIS, false, Defaults.LOG_FORMAT, Defaults.LOG_SEGMENT_BYTES,
        Defaults.MAX_UNCOMMITTED_BYTES_PER_SHARD);

    public ClusterConfig
    {
        peers = Collections.unmodifiableMap(new LinkedHashMap<>(peers == null ? Map.of() : peers));
        Settings.require(logFormat != null, "--log-format must be compact or classic");
        Settings.require(fastLingerMicros >= 0 && fastLingerMicros <= Defaults.MAX_FAST_LINGER_MICROS,
            "--fast-linger-ms must be 0 to " + Defaults.MAX_FAST_LINGER_MICROS / 1000 + " ms, was " +
                fastLingerMicros / 1000.0 + " ms");
        if (peers.isEmpty())
        {
            requireSingleNode(nodeId, raftGroups, electionTimeoutMillis, memoryFirst);
        }
        else
        {
            requireMember(nodeId, peers, raftPortOffset, snapshotEveryEntries, electionTimeoutMillis, logSegmentBytes,
                maxUncommittedBytesPerShard);
        }
    }

    private static void requireSingleNode(final String nodeId, final int raftGroups, final long electionTimeoutMillis,
        final boolean memoryFirst)
    {
        Settings.require(!memoryFirst, "--memory-first sets how a cluster's Raft log is synced: give --node-id and " +
            "--peers, or leave it out on a single node");
        Settings.require(nodeId == null, "--node-id needs --peers (the members of the cluster, this node included)");
        Settings.require(raftGroups == Defaults.RAFT_GROUPS,
            "--raft-groups needs --peers: a single node replicates nothing");
        Settings.require(electionTimeoutMillis == Defaults.ELECTION_TIMEOUT_MILLIS,
            "--election-timeout-ms needs --peers: a single node holds no elections");
    }

    private static void requireMember(final String nodeId, final Map<String, InetSocketAddress> peers,
        final int raftPortOffset, final long snapshotEveryEntries, final long electionTimeoutMillis,
        final int logSegmentBytes, final int maxUncommittedBytesPerShard)
    {
        Settings.require(nodeId != null && peers.containsKey(nodeId),
            "--node-id must be one of the ids in --peers (" + peers.keySet() + "), was " + nodeId);
        Settings.require(raftPortOffset > 0 && raftPortOffset < 10000,
            "raft port offset must be 1 to 9999, was " + raftPortOffset);
        Settings.require(snapshotEveryEntries >= 1,
            "--snapshot-every must be at least 1 log entry, was " + snapshotEveryEntries);
        Settings.require(electionTimeoutMillis >= Defaults.ELECTION_TIMEOUT_MILLIS &&
                electionTimeoutMillis <= Defaults.MAX_ELECTION_TIMEOUT_MILLIS,
            "--election-timeout-ms must be " + Defaults.ELECTION_TIMEOUT_MILLIS + " (the default) to " +
                Defaults.MAX_ELECTION_TIMEOUT_MILLIS + " ms, was " + electionTimeoutMillis);
        Settings.require(maxUncommittedBytesPerShard >= 1,
            "a shard's uncommitted bytes bound must be at least 1, was " + maxUncommittedBytesPerShard);
        Settings.require(logSegmentBytes >= 1024,
            "a Raft log segment must be at least 1 KiB, was " + logSegmentBytes + " bytes");
        for (final Map.Entry<String, InetSocketAddress> peer : peers.entrySet())
        {
            Settings.require(peer.getValue().getPort() + raftPortOffset <= 65535, "peer " + peer.getKey() + ": port " +
                peer.getValue().getPort() + " + raft offset " + raftPortOffset + " exceeds 65535");
        }
    }

    /** Whether this node is a member of a replicated cluster (peers given). */
    public boolean clustered()
    {
        return !peers.isEmpty();
    }

    /** Every member's Raft address by node id: its data-plane address, port plus {@link #raftPortOffset}. */
    public Map<String, InetSocketAddress> raftAddresses()
    {
        final Map<String, InetSocketAddress> raft = new LinkedHashMap<>();
        peers.forEach((id, address) -> raft.put(id,
            new InetSocketAddress(address.getHostString(), address.getPort() + raftPortOffset)));
        return raft;
    }

    /** {@link #fastLingerMicros} in nanoseconds. */
    public long fastLingerNanos()
    {
        return TimeUnit.MICROSECONDS.toNanos(fastLingerMicros);
    }

    /**
     * This member's Raft settings: its id, the members' Raft addresses, the log in {@code storageDir}
     * and how it is written, elections and the Raft port's preface timeout. What is not a setting
     * (the TLS managers, the listener of refused connections) the caller adds.
     *
     * @param storageDir           where the Raft log and snapshots live
     * @param prefaceTimeoutMillis a Raft connection must send its HTTP/2 preface within this, ms
     * @throws IllegalStateException on a single node, which has no Raft settings
     */
    public RaftNodeConfig raftNodeConfig(final Path storageDir, final long prefaceTimeoutMillis)
    {
        if (!clustered())
        {
            throw new IllegalStateException("a single node has no Raft settings: give --node-id and --peers");
        }
        return new RaftNodeConfig()
            .nodeId(nodeId)
            .peers(raftAddresses())
            .storageDir(storageDir)
            .groupName(Defaults.GROUP_NAME)
            .joining(joining)
            .snapshotEveryEntries(snapshotEveryEntries)
            .memoryFirst(memoryFirst)
            .electionTimeoutMin(Duration.ofMillis(electionTimeoutMillis))
            .logSegmentBytes(logSegmentBytes)
            .prefaceTimeoutMillis(prefaceTimeoutMillis);
    }
}
