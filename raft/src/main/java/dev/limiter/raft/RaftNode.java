package dev.limiter.raft;

import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.apache.ratis.proto.RaftProtos;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.SetConfigurationRequest;
import org.apache.ratis.protocol.SnapshotManagementRequest;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftConfiguration;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One member of a replicated group, on Apache Ratis (gRPC transport). The application submits
 * payloads on the leader ({@link #submit}); they are stamped with the cluster clock, replicated,
 * committed on a quorum and applied, in log order, on every member by its
 * {@link ReplicatedStateMachine}. Snapshots are taken automatically every
 * {@link RaftNodeConfig#snapshotEveryEntries()} entries, after which the log is purged; a member
 * that falls behind the purged log receives a snapshot. A restarted member recovers from its
 * latest snapshot plus its log.
 */
public final class RaftNode implements AutoCloseable
{
    private final RaftNodeConfig config;
    private final StampedStateMachine stateMachine;
    private final RaftGroup group;
    private final RaftPeerId selfId;
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    private RaftServer server;

    public RaftNode(final RaftNodeConfig config, final ReplicatedStateMachine application)
    {
        this.config = config.validate();
        this.stateMachine = new StampedStateMachine(application, config.nodeId());
        this.selfId = RaftPeerId.valueOf(config.nodeId());
        this.group = RaftGroup.valueOf(groupId(config.groupName()), peers(config.peers()));
    }

    /** The group id every member derives from the group name. */
    static RaftGroupId groupId(final String groupName)
    {
        return RaftGroupId.valueOf(UUID.nameUUIDFromBytes(("limiter-group:" + groupName).getBytes(StandardCharsets.UTF_8)));
    }

    private static List<RaftPeer> peers(final Map<String, InetSocketAddress> peers)
    {
        final List<RaftPeer> list = new ArrayList<>();
        peers.forEach((id, address) -> list.add(RaftPeer.newBuilder().setId(id)
            .setAddress(address.getHostString() + ":" + address.getPort()).build()));
        return list;
    }

    /** Opens the storage (recovering from it), binds the Raft port and joins the group. */
    public RaftNode start() throws IOException
    {
        final RaftProperties properties = new RaftProperties();
        RaftServerConfigKeys.setStorageDir(properties, List.of(config.storageDir().toFile()));
        final InetSocketAddress self = config.peers().get(config.nodeId());
        GrpcConfigKeys.Server.setHost(properties, self.getHostString());
        GrpcConfigKeys.Server.setPort(properties, self.getPort());
        RaftServerConfigKeys.Rpc.setTimeoutMin(properties, millis(config.electionTimeoutMin().toMillis()));
        RaftServerConfigKeys.Rpc.setTimeoutMax(properties, millis(config.electionTimeoutMax().toMillis()));
        // A joining member waits (a day) for the leader's first append instead of campaigning.
        final long firstMin = config.joining() ? 86_400_000L : config.electionTimeoutMin().toMillis();
        final long firstMax = config.joining() ? 86_400_001L : config.electionTimeoutMax().toMillis();
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMin(properties, millis(firstMin));
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMax(properties, millis(firstMax));
        // After a pause (or a lost majority) a member returns to elections in a second, not ten.
        RaftServerConfigKeys.LeaderElection.setLeaderStepDownWaitTime(properties, millis(config.leaderStepDownMillis()));
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(properties, true);
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(properties, config.snapshotEveryEntries());
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(properties, 2);
        RaftServerConfigKeys.Log.setSegmentSizeMax(properties, SizeInBytes.valueOf(config.logSegmentBytes()));
        RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(properties, true);
        // Entries carry thousands of decisions (up to ~1 MiB): keep few closed segments on the heap,
        // or they survive young collections and every pause copies them.
        RaftServerConfigKeys.Log.setSegmentCacheNumMax(properties, 2);
        RaftServerConfigKeys.Log.Appender.setSnapshotChunkSizeMax(properties, SizeInBytes.valueOf(config.snapshotChunkBytes()));
        RaftServerConfigKeys.Log.setPurgeGap(properties, 1);
        final Parameters parameters = new Parameters();
        GrpcConfigKeys.Server.setServicesCustomizer(parameters, new RaftPortGuard(config));
        if (config.tlsCert() != null)
        {
            // Mutual: the server side (in RaftPortGuard) and the channels this member opens to its peers.
            final GrpcTlsConfig tls = new GrpcTlsConfig(config.tlsKey().toFile(),
                config.tlsCert().toFile(), config.tlsCa().toFile(), true);
            GrpcConfigKeys.Server.setTlsConf(parameters, tls);
            GrpcConfigKeys.Client.setTlsConf(parameters, tls);
            GrpcConfigKeys.Admin.setTlsConf(parameters, tls);
        }
        server = RaftServer.newBuilder()
            .setServerId(selfId)
            .setGroup(group)
            .setProperties(properties)
            .setParameters(parameters)
            .setStateMachine(stateMachine)
            .setOption(storageExists() ? RaftStorage.StartupOption.RECOVER :
                RaftStorage.StartupOption.FORMAT)
            .build();
        server.start();
        return this;
    }

    private boolean storageExists()
    {
        final File dir = config.storageDir().resolve(group.getGroupId().getUuid().toString()).toFile();
        return dir.isDirectory();
    }

    private static TimeDuration millis(final long ms)
    {
        return TimeDuration.valueOf(ms, TimeUnit.MILLISECONDS);
    }

    /**
     * Replicates {@code payload}; completes with the application's reply once the entry is
     * committed and applied on this node, or exceptionally with {@link NotLeaderException} when
     * this node is not the leader.
     */
    public CompletableFuture<ByteBuffer> submit(final ByteBuffer payload)
    {
        final RaftClientRequest request = RaftClientRequest.newBuilder()
            .setClientId(clientId)
            .setServerId(selfId)
            .setGroupId(group.getGroupId())
            .setCallId(callIds.incrementAndGet())
            .setMessage(Message.valueOf(UnsafeByteOperations.unsafeWrap(payload.duplicate())))
            .setType(RaftClientRequest.writeRequestType())
            .build();
        try
        {
            return server.submitClientRequestAsync(request).thenApply(this::unwrap);
        }
        catch (final IOException e)
        {
            return CompletableFuture.failedFuture(e);
        }
    }

    private ByteBuffer unwrap(final RaftClientReply reply)
    {
        if (reply.isSuccess())
        {
            return reply.getMessage().getContent().asReadOnlyByteBuffer();
        }
        if (reply.getNotLeaderException() != null)
        {
            final RaftPeer suggested = reply.getNotLeaderException().getSuggestedLeader();
            throw new NotLeaderException(config.nodeId(), suggested == null ? null : suggested.getId().toString());
        }
        throw new IllegalStateException("entry not committed: " + reply.getException());
    }

    private DivisionInfo info()
    {
        try
        {
            return server.getDivision(group.getGroupId()).getInfo();
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException(e);
        }
    }

    public String nodeId()
    {
        return config.nodeId();
    }

    public RaftNodeConfig config()
    {
        return config;
    }

    /** Whether this node is the leader and has committed an entry of its term (ready to serve). */
    public boolean isLeader()
    {
        final DivisionInfo info = info();
        return info.isLeader() && info.isLeaderReady();
    }

    /** The members of the group now in force (from the committed configuration): id to Raft address. */
    public Map<String, String> members()
    {
        try
        {
            final Map<String, String> members = new LinkedHashMap<>();
            server.getDivision(group.getGroupId()).getRaftConf().getCurrentPeers()
                .forEach(peer -> members.put(peer.getId().toString(), peer.getAddress()));
            return members;
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * When this leader last heard from a majority of its group, itself included ({@link System#nanoTime()}
     * terms, from each follower's latest reply; millisecond precision, rounded down), or
     * {@link Long#MIN_VALUE} when it does not lead or is not a member of the configuration in force
     * (a leader that removed itself). While a configuration change is under way both the old and
     * the new members must have answered. This is what a leader lease is measured from.
     */
    public long majorityContactNanos()
    {
        final RaftServer.Division division;
        try
        {
            division = server.getDivision(group.getGroupId());
        }
        catch (final IOException e)
        {
            return Long.MIN_VALUE;
        }
        final DivisionInfo info = division.getInfo();
        if (!info.isLeader())
        {
            return Long.MIN_VALUE;
        }
        final RaftProtos.RoleInfoProto role = info.getRoleInfoProto();
        if (!role.hasLeaderInfo())
        {
            return Long.MIN_VALUE;
        }
        final long now = System.nanoTime();
        final Map<String, Long> heardAt = new HashMap<>();
        for (final RaftProtos.ServerRpcProto follower : role.getLeaderInfo().getFollowerInfoList())
        {
            heardAt.put(follower.getId().getId().toStringUtf8(),
                now - TimeUnit.MILLISECONDS.toNanos(follower.getLastRpcElapsedTimeMs() + 1));
        }
        heardAt.put(selfId.toString(), now);
        final RaftConfiguration conf = division.getRaftConf();
        if (conf.getCurrentPeers().stream().noneMatch(peer -> peer.getId().equals(selfId)))
        {
            return Long.MIN_VALUE;
        }
        final long current = majorityHeardAt(conf.getCurrentPeers(), heardAt);
        final Collection<RaftPeer> previous = conf.getPreviousPeers();
        return previous.isEmpty() ? current : Math.min(current, majorityHeardAt(previous, heardAt));
    }

    /** The latest time by which a majority of {@code members} had been heard from. */
    private static long majorityHeardAt(final Collection<RaftPeer> members, final Map<String, Long> heardAt)
    {
        final long[] times = members.stream().mapToLong(peer -> heardAt.getOrDefault(peer.getId().toString(), Long.MIN_VALUE))
            .sorted().toArray();
        // Sorted ascending: the majority-th most recent is at index size - majority.
        return times.length == 0 ? Long.MIN_VALUE : times[times.length - (times.length / 2 + 1)];
    }

    /** Whether Ratis holds this node as leader of its group now (ready or not). */
    public boolean isRaftLeader()
    {
        return info().isLeader();
    }

    /** The leader this node knows of, or null. */
    public String leaderId()
    {
        final RaftPeerId leader = info().getLeaderId();
        return leader == null ? null : leader.toString();
    }

    public long term()
    {
        return info().getCurrentTerm();
    }

    public long lastAppliedIndex()
    {
        return info().getLastAppliedIndex();
    }

    /**
     * The leader's cluster clock, for deciding now: non-decreasing, continuing just after the
     * latest stamp this node knows when its term began. Only meaningful on the leader.
     */
    public long leaderClockNanos()
    {
        return stateMachine.stamp(term());
    }

    /** Re-bases the leader clock on the latest applied stamp at the next stamp (see the class doc). */
    public void rebaseLeaderClock()
    {
        stateMachine.rebaseClock();
    }

    /** Cluster time of the latest applied entry, in nanoseconds (Long.MIN_VALUE before the first). */
    public long lastAppliedClusterNanos()
    {
        return stateMachine.lastAppliedStamp();
    }

    /** Size in bytes of the latest snapshot this node wrote (0 before the first). */
    public long lastSnapshotBytes()
    {
        return stateMachine.lastSnapshotBytes();
    }

    /** How long writing the latest snapshot took, in nanoseconds. */
    public long lastSnapshotNanos()
    {
        return stateMachine.lastSnapshotNanos();
    }

    /** Snapshots this node has written. */
    public long snapshotsTaken()
    {
        return stateMachine.snapshotsTaken();
    }

    /** Snapshots this node received from a leader because it had fallen behind the purged log. */
    public long snapshotsInstalled()
    {
        return stateMachine.snapshotsInstalled();
    }

    public void addLeaderListener(final LeaderListener listener)
    {
        stateMachine.addListener(listener);
    }

    /** Takes a snapshot now (normally automatic); completes with its log index. */
    public CompletableFuture<Long> snapshot()
    {
        return server.snapshotManagementAsync(SnapshotManagementRequest.newCreate(clientId, selfId, group.getGroupId(),
            callIds.incrementAndGet(), 10_000)).thenApply(reply ->
        {
            if (!reply.isSuccess())
            {
                throw new IllegalStateException("snapshot failed: " + reply.getException());
            }
            return reply.getLogIndex();
        });
    }

    /**
     * Changes the group's members (run on the leader): nodes added catch up from the log or a
     * snapshot; nodes removed stop taking part.
     */
    public CompletableFuture<Void> setMembers(final Map<String, InetSocketAddress> members)
    {
        try
        {
            return server.setConfigurationAsync(new SetConfigurationRequest(clientId, selfId, group.getGroupId(),
                callIds.incrementAndGet(), peers(members))).thenApply(reply ->
            {
                if (reply.getNotLeaderException() != null)
                {
                    final RaftPeer suggested = reply.getNotLeaderException().getSuggestedLeader();
                    throw new NotLeaderException(config.nodeId(), suggested == null ? null : suggested.getId().toString());
                }
                if (!reply.isSuccess())
                {
                    throw new IllegalStateException("membership change failed: " + reply.getException());
                }
                return null;
            });
        }
        catch (final IOException e)
        {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public void close() throws IOException
    {
        if (server != null)
        {
            server.close();
            server = null;
        }
    }
}
