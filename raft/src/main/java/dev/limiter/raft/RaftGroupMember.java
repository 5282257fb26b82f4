package dev.limiter.raft;

import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientAsynchronousProtocol;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.SnapshotManagementRequest;
import org.apache.ratis.protocol.TransferLeadershipRequest;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftConfiguration;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.util.TimeDuration;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * This node's part in one Raft group of a {@link RaftNode} (a Ratis division): submitting entries
 * while it leads, leadership and term, the members, the leader lease and clock, snapshots and
 * membership changes. Each group has its own log, leader, clock and state machine.
 */
public final class RaftGroupMember
{
    private final int index;
    private final RaftGroup group;
    private final StampedStateMachine stateMachine;
    private final RaftPeerId selfId;
    private final String nodeId;
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    private final Supplier<RaftServer> server;
    private final Supplier<RaftProperties> clientProperties;
    private final Supplier<Parameters> clientParameters;

    RaftGroupMember(final int index, final RaftGroup group, final StampedStateMachine stateMachine, final String nodeId,
        final Supplier<RaftServer> server, final Supplier<RaftProperties> clientProperties, final Supplier<Parameters> clientParameters)
    {
        this.index = index;
        this.group = group;
        this.stateMachine = stateMachine;
        this.nodeId = nodeId;
        this.selfId = RaftPeerId.valueOf(nodeId);
        this.server = server;
        this.clientProperties = clientProperties;
        this.clientParameters = clientParameters;
    }

    /** Between two requests to move the lead: at least this, in nanoseconds, doubled after each that failed. */
    private static final long TRANSFER_RETRY_NANOS = TimeUnit.SECONDS.toNanos(3);
    /** The longest wait between two requests after failures, in nanoseconds. */
    private static final long TRANSFER_RETRY_MAX_NANOS = TimeUnit.SECONDS.toNanos(48);
    /** A preferred member that has not answered within this is not handed the lead. */
    private static final long ALIVE_MILLIS = 1000;
    /**
     * A stopping leader hands the lead only to a member that answered within this, in milliseconds
     * (several heartbeats): one that stopped just before it would make it wait out the transfer.
     */
    private static final long STOP_ALIVE_MILLIS = 400;
    /**
     * A leader leads this long before it hands the lead over. Ratis starts a new leader's view of
     * every follower as "answered just now", so only past {@link #ALIVE_MILLIS} does that view tell a
     * live member from a dead one; half a second more for the first replies on a busy machine.
     */
    private static final long SETTLE_MILLIS = ALIVE_MILLIS + 500;
    /**
     * A preferred member this leader found away must have answered again for this long, in
     * milliseconds, before it is handed the lead: each group's leader catches a returning member up
     * at its next retry of the failed appends, and it decides for this group only once it has
     * applied what the other groups (the control group's policies among them) brought it. Handed
     * the lead sooner, it would lead without deciding until then. Ratis retries a member's failed
     * appends 0.5-1.5 s apart for its first 10-30 s away, then 2.5-7.5 s apart.
     */
    static final long RETURNED_ANSWERING_MILLIS = 8000;
    /** The same after an absence shorter than {@link #SHORT_ABSENCE_MILLIS}: Ratis still retries within 1.5 s. */
    static final long RETURNED_SOON_ANSWERING_MILLIS = 2000;
    /**
     * An absence this short, in milliseconds, as this leader saw it, leaves every group's leader
     * still retrying within 1.5 s: Ratis' slower retries begin after 10 s at the soonest, and a
     * leader elected after the member left sees less of its absence than the others do (the 3 s
     * margin covers that).
     */
    static final long SHORT_ABSENCE_MILLIS = 7_000;
    /**
     * A preferred member whose log ends this many entries or more before this leader's commit
     * index is not handed the lead yet: Ratis would wait for it to catch up while it refuses new
     * entries, and nothing is decided meanwhile.
     */
    static final long MAX_LAG_ENTRIES = 8;
    /**
     * The longest a planned hand-over waits for the application to get ready (what it answered
     * committed: a commit or two), in milliseconds; beyond it the lead stays where it is.
     */
    public static final long HAND_OVER_PREPARE_MILLIS = 1000;
    /** How long Ratis may take to move the lead once asked, in milliseconds (an election, with the member caught up). */
    private static final long TRANSFER_TIMEOUT_MILLIS = 2000;
    private volatile PlannedHandOver plannedHandOver = PlannedHandOver.NONE;
    /** Set while a hand-over is being prepared or transferred: one at a time. */
    private final AtomicBoolean handingOver = new AtomicBoolean();
    // Owned by the rebalancing thread:
    private long lastTransferNanos = System.nanoTime() - TRANSFER_RETRY_MAX_NANOS;
    private long transferRetryNanos = TRANSFER_RETRY_NANOS;
    /**
     * When (System.nanoTime) the preferred member last answered before this leader found it not
     * answering (at the latest); 0 when this leader has not found it away in this term.
     */
    private long preferredAwaySinceNanos;
    /** Since when (System.nanoTime) a preferred member that was away has answered at every check; 0: not answering. */
    private long preferredBackSinceNanos;

    /**
     * On the leader of a group of several (on the node's rebalancing thread, {@code rebalancer}):
     * hands the lead to the member this group prefers ({@link RaftNode#preferredLeader}, from the
     * configuration in force) when that is another member that answered within the last second
     * (and, if this leader found it away, has answered again for {@link #RETURNED_ANSWERING_MILLIS})
     * and whose log is within {@link #MAX_LAG_ENTRIES} of the commit index. The application first
     * gets what it answered into the log ({@link PlannedHandOver}), then Ratis moves the lead. At
     * most one request every 3 s, less often after failed ones; nothing during a configuration change.
     */
    void handOverToPreferred(final Executor rebalancer)
    {
        final long now = System.nanoTime();
        try
        {
            final RaftServer.Division division = division();
            final DivisionInfo info = division.getInfo();
            final RaftConfiguration conf = division.getRaftConf();
            // A new leader's view of its followers starts fresh: judge them after a few seconds of leading.
            if (!info.isLeader() || !info.isLeaderReady() || !conf.getPreviousPeers().isEmpty() ||
                info.getRoleInfoProto().getRoleElapsedTimeMs() < SETTLE_MILLIS)
            {
                preferredAwaySinceNanos = 0; // judged afresh in each term, once this leader's view has settled
                preferredBackSinceNanos = 0;
                transferRetryNanos = TRANSFER_RETRY_NANOS;
                return;
            }
            final List<String> ids = conf.getCurrentPeers().stream().map(peer -> peer.getId().toString()).toList();
            final String preferred = RaftNode.preferredLeader(ids, index);
            if (preferred.equals(nodeId))
            {
                return;
            }
            if (!answeredRecently(info, preferred))
            {
                if (preferredAwaySinceNanos == 0 || preferredBackSinceNanos != 0)
                {
                    preferredAwaySinceNanos = now - TimeUnit.MILLISECONDS.toNanos(ALIVE_MILLIS);
                }
                preferredBackSinceNanos = 0;
                return;
            }
            if (preferredAwaySinceNanos != 0)
            {
                if (preferredBackSinceNanos == 0)
                {
                    preferredBackSinceNanos = now;
                }
                final long away = preferredBackSinceNanos - preferredAwaySinceNanos;
                final long wait = away < TimeUnit.MILLISECONDS.toNanos(SHORT_ABSENCE_MILLIS) ? RETURNED_SOON_ANSWERING_MILLIS
                    : RETURNED_ANSWERING_MILLIS;
                if (now - preferredBackSinceNanos < TimeUnit.MILLISECONDS.toNanos(wait))
                {
                    return;
                }
            }
            if (now - lastTransferNanos < transferRetryNanos || !caughtUp(division, info, preferred) ||
                !handingOver.compareAndSet(false, true))
            {
                return;
            }
            lastTransferNanos = now;
            handOver(RaftPeerId.valueOf(preferred), info.getCurrentTerm(), rebalancer);
        }
        catch (final RuntimeException stopping)
        {
            // Not running (stopping, or the group is being removed): nothing to hand over.
        }
    }

    /** Whether {@code member}'s log ends within {@link #MAX_LAG_ENTRIES} of this leader's commit index. */
    private static boolean caughtUp(final RaftServer.Division division, final DivisionInfo info, final String member)
    {
        // Ratis lists the followers' match indices in the order of its role report's followers.
        final List<RaftProtos.ServerRpcProto> followers = info.getRoleInfoProto().getLeaderInfo().getFollowerInfoList();
        final long[] matched = info.getFollowerMatchIndices();
        if (matched == null || matched.length != followers.size())
        {
            return false;
        }
        for (int i = 0; i < matched.length; i++)
        {
            if (followers.get(i).getId().getId().toStringUtf8().equals(member))
            {
                return matched[i] > division.getRaftLog().getLastCommittedIndex() - MAX_LAG_ENTRIES;
            }
        }
        return false;
    }

    private static boolean answeredRecently(final DivisionInfo info, final String member)
    {
        final RaftProtos.RoleInfoProto role = info.getRoleInfoProto();
        if (!role.hasLeaderInfo())
        {
            return false;
        }
        for (final RaftProtos.ServerRpcProto follower : role.getLeaderInfo().getFollowerInfoList())
        {
            if (follower.getId().getId().toStringUtf8().equals(member))
            {
                return follower.getLastRpcElapsedTimeMs() < ALIVE_MILLIS;
            }
        }
        return false;
    }

    /**
     * Lets the application get ready (it stops acting as leader and gets what it answered into the
     * log), then, if this node still leads {@code term}, asks Ratis to move the lead, and tells the
     * application how it ended. The steps after the first run on {@code rebalancer}: never on an
     * event loop or a Ratis thread that completed a future.
     */
    private CompletableFuture<Boolean> handOver(final RaftPeerId to, final long term, final Executor rebalancer)
    {
        final PlannedHandOver application = plannedHandOver;
        CompletableFuture<Void> prepared;
        try
        {
            prepared = application.prepare().orTimeout(HAND_OVER_PREPARE_MILLIS, TimeUnit.MILLISECONDS);
        }
        catch (final RuntimeException e)
        {
            prepared = CompletableFuture.failedFuture(e);
        }
        return prepared.thenComposeAsync(ready -> stillLeads(term) ? transferTo(to)
                : CompletableFuture.failedFuture(new IllegalStateException("no longer the leader of term " + term)), rebalancer)
            .handleAsync((reply, failure) ->
            {
                final boolean moved = failure == null && reply.isSuccess();
                // A member that could not take the lead is asked less often (back to every 3 s once it took it).
                transferRetryNanos = moved ? TRANSFER_RETRY_NANOS : Math.min(2 * transferRetryNanos, TRANSFER_RETRY_MAX_NANOS);
                lastTransferNanos = System.nanoTime();
                try
                {
                    application.ended(moved);
                }
                finally
                {
                    handingOver.set(false);
                }
                return moved;
            }, rebalancer);
    }

    /**
     * The node is stopping: when this member leads, hands the lead to the member most caught up of
     * those that answered within {@link #STOP_ALIVE_MILLIS}, as a planned hand-over does (the application
     * first gets what it answered into the log). Completes with whether the lead moved, never
     * exceptionally; at once when this member does not lead or no member could take the lead.
     */
    CompletableFuture<Boolean> handOverBeforeStop(final Executor steps)
    {
        try
        {
            final RaftServer.Division division = division();
            final DivisionInfo info = division.getInfo();
            if (!info.isLeader() || !division.getRaftConf().getPreviousPeers().isEmpty())
            {
                return CompletableFuture.completedFuture(false);
            }
            final String successor = successor(division, info);
            if (successor == null || !handingOver.compareAndSet(false, true))
            {
                return CompletableFuture.completedFuture(false);
            }
            return handOver(RaftPeerId.valueOf(successor), info.getCurrentTerm(), steps);
        }
        catch (final RuntimeException stopping)
        {
            return CompletableFuture.completedFuture(false);
        }
    }

    /** The follower whose log ends furthest along, of those that answered recently and are caught up; null if none. */
    private static String successor(final RaftServer.Division division, final DivisionInfo info)
    {
        final RaftProtos.RoleInfoProto role = info.getRoleInfoProto();
        final long[] matched = info.getFollowerMatchIndices();
        if (!role.hasLeaderInfo() || matched == null || matched.length != role.getLeaderInfo().getFollowerInfoCount())
        {
            return null;
        }
        final long commit = division.getRaftLog().getLastCommittedIndex();
        String best = null;
        long bestMatched = commit - MAX_LAG_ENTRIES;
        for (int i = 0; i < matched.length; i++)
        {
            final RaftProtos.ServerRpcProto follower = role.getLeaderInfo().getFollowerInfo(i);
            if (follower.getLastRpcElapsedTimeMs() < STOP_ALIVE_MILLIS && matched[i] > bestMatched)
            {
                best = follower.getId().getId().toStringUtf8();
                bestMatched = matched[i];
            }
        }
        return best;
    }

    private boolean stillLeads(final long term)
    {
        try
        {
            final DivisionInfo info = info();
            return info.isLeader() && info.getCurrentTerm() == term;
        }
        catch (final RuntimeException stopping)
        {
            return false;
        }
    }

    private CompletableFuture<RaftClientReply> transferTo(final RaftPeerId to)
    {
        try
        {
            return server.get().transferLeadershipAsync(new TransferLeadershipRequest(clientId, selfId, group.getGroupId(),
                callIds.incrementAndGet(), to, TRANSFER_TIMEOUT_MILLIS));
        }
        catch (final IOException e)
        {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * What this group's application does around a planned hand-over of the lead (by default
     * nothing): see {@link PlannedHandOver}.
     */
    public void onPlannedHandOver(final PlannedHandOver handOver)
    {
        this.plannedHandOver = handOver;
    }

    /** This group's place among the node's groups (0 is the first). */
    public int index()
    {
        return index;
    }

    RaftGroup group()
    {
        return group;
    }

    StampedStateMachine stateMachine()
    {
        return stateMachine;
    }

    /**
     * Replicates {@code payload}; completes with the application's reply once the entry is
     * committed and applied on this node, or exceptionally with {@link NotLeaderException} when
     * this node does not lead the group.
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
            // The group's division takes the request on this thread. Through the server instead,
            // Ratis hands every request to a pool thread and blocks this one until that thread has
            // appended it: two thread wake-ups per entry that this path does without (docs/cluster.md).
            final RaftServer.Division division = server.get().getDivision(group.getGroupId());
            final RaftClientAsynchronousProtocol direct = division instanceof RaftClientAsynchronousProtocol
                ? (RaftClientAsynchronousProtocol)division : server.get();
            return direct.submitClientRequestAsync(request).thenApply(this::unwrap);
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
            throw new NotLeaderException(nodeId, suggested == null ? null : suggested.getId().toString());
        }
        throw new IllegalStateException("entry not committed: " + reply.getException());
    }

    private RaftServer.Division division()
    {
        try
        {
            return server.get().getDivision(group.getGroupId());
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException(e);
        }
    }

    private DivisionInfo info()
    {
        return division().getInfo();
    }

    /** Whether this node leads the group and has committed an entry of its term (ready to serve). */
    public boolean isLeader()
    {
        final DivisionInfo info = info();
        return info.isLeader() && info.isLeaderReady();
    }

    /** Whether Ratis holds this node as leader of the group now (ready or not). */
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

    /** The highest log index this node knows to be committed (a follower learns it from its leader). */
    public long lastCommittedIndex()
    {
        return division().getRaftLog().getLastCommittedIndex();
    }

    /** The members of the group now in force (from the committed configuration): id to Raft address. */
    public Map<String, String> members()
    {
        final Map<String, String> members = new LinkedHashMap<>();
        division().getRaftConf().getCurrentPeers().forEach(peer -> members.put(peer.getId().toString(), peer.getAddress()));
        return members;
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
            division = server.get().getDivision(group.getGroupId());
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

    /**
     * The leader's cluster clock for this group, for deciding now: non-decreasing, continuing just
     * after the latest stamp this node knows when its term began. Only meaningful on the leader.
     */
    public long leaderClockNanos()
    {
        return stateMachine.stamp(term());
    }

    /** Re-bases the leader clock on the latest applied stamp at the next stamp. */
    public void rebaseLeaderClock()
    {
        stateMachine.rebaseClock();
    }

    /** Cluster time of the latest applied entry, in nanoseconds (Long.MIN_VALUE before the first). */
    public long lastAppliedClusterNanos()
    {
        return stateMachine.lastAppliedStamp();
    }

    /** Size in bytes of the latest snapshot this node wrote for the group (0 before the first). */
    public long lastSnapshotBytes()
    {
        return stateMachine.lastSnapshotBytes();
    }

    /** How long the latest snapshot took from the copy of the state to the synced file, in nanoseconds. */
    public long lastSnapshotNanos()
    {
        return stateMachine.lastSnapshotNanos();
    }

    /** Log segments purged after a snapshot whose disk space was freed off Ratis' log thread (see SegmentTrash). */
    public long purgedSegmentsFreed()
    {
        return stateMachine.purgedSegmentsFreed();
    }

    /**
     * How long the latest snapshot stopped this group's apply thread (the copy of the state into
     * memory; the file is written on another thread), in nanoseconds.
     */
    public long lastSnapshotCopyNanos()
    {
        return stateMachine.lastSnapshotCopyNanos();
    }

    /** Snapshots this node has written for the group. */
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

    /**
     * Takes a snapshot of what this group has applied (normally automatic): completes with the index
     * of a snapshot on disk at or past what was applied when called, or with -1 if four attempts did
     * not give one (a group applying faster than its snapshots are written).
     */
    public CompletableFuture<Long> snapshot()
    {
        return snapshot(lastAppliedIndex(), 4);
    }

    private CompletableFuture<Long> snapshot(final long atLeast, final int tries)
    {
        // -1: the state was copied and the file is being written; an index below atLeast: a write that
        // had finished but was not reported yet (Ratis learns of a write at its next apply). Either way
        // the next request, once the write is done, reports it or copies the state afresh.
        return requestSnapshot().thenCompose(index ->
        {
            if (index >= atLeast)
            {
                return CompletableFuture.completedFuture(index);
            }
            if (tries <= 1)
            {
                return CompletableFuture.completedFuture(-1L);
            }
            final CompletableFuture<?> ready = index < 0 ? stateMachine.snapshotWritten() : CompletableFuture.completedFuture(null);
            return ready.thenCompose(written -> snapshot(atLeast, tries - 1));
        });
    }

    private CompletableFuture<Long> requestSnapshot()
    {
        // A creation gap of 1: a snapshot Ratis knows of is the answer only if nothing was applied since.
        // With its default (1,024 entries) it answered with an older one whenever the latest write had
        // not been reported to it yet (it learns of a write at its next apply).
        return server.get().snapshotManagementAsync(SnapshotManagementRequest.newCreate(clientId, selfId, group.getGroupId(),
            callIds.incrementAndGet(), 10_000, 1)).thenApply(reply ->
        {
            if (!reply.isSuccess())
            {
                throw new IllegalStateException("snapshot failed: " + reply.getException());
            }
            return reply.getLogIndex();
        });
    }

    /**
     * Changes the group's members, wherever its leader is (through a Ratis client that finds it):
     * nodes added catch up from the log or a snapshot; nodes removed stop taking part.
     *
     * @param members id to Raft address, the complete new list
     */
    public CompletableFuture<Void> setMembers(final Map<String, InetSocketAddress> members)
    {
        final List<RaftPeer> peers = RaftNode.peers(members);
        return CompletableFuture.runAsync(() ->
        {
            try (RaftClient client = RaftClient.newBuilder()
                .setRaftGroup(RaftGroup.valueOf(group.getGroupId(), division().getRaftConf().getCurrentPeers()))
                .setProperties(clientProperties.get())
                .setParameters(clientParameters.get())
                // Bounded: a group without a leader for ten seconds fails the change instead of hanging it.
                .setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(100, TimeDuration.valueOf(100, TimeUnit.MILLISECONDS)))
                .build())
            {
                final RaftClientReply reply = client.admin().setConfiguration(peers);
                if (!reply.isSuccess())
                {
                    throw new IllegalStateException("membership change of group " + index + " failed: " + reply.getException());
                }
            }
            catch (final IOException e)
            {
                throw new UncheckedIOException("membership change of group " + index + " failed: " + e.getMessage(), e);
            }
        });
    }
}
