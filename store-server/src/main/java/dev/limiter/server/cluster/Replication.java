package dev.limiter.server.cluster;

import dev.limiter.protocol.HostPort;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.raft.NotLeaderException;
import dev.limiter.raft.PlannedHandOver;
import dev.limiter.raft.RaftGroupMember;
import dev.limiter.raft.RaftNode;
import dev.limiter.server.control.PolicyLog;
import dev.limiter.server.table.BucketTable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

/**
 * A node's part in the cluster: whether it may decide (it leads and its deciding tables have been
 * synced from the committed ones for this term), the leader's cluster clock, and the way batches of
 * decisions reach the log.
 *
 * <p>When this node becomes leader it appends a SYNC marker; when the marker is applied, every
 * entry before it is applied too, so the committed tables are complete: each shard's owner thread
 * copies them into its deciding table (the apply thread waits, so nothing moves meanwhile) and only
 * then does the node start deciding. Speculative state of an earlier term is thereby dropped.
 */
public final class Replication implements ReplicatedBuckets.SyncTarget, PolicyLog, PlannedHandOver, AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(Replication.class);

    /** A shard's deciding side, as the sync sees it. */
    public interface DecidingShard
    {
        int id();

        Executor owner();

        /**
         * On the owner thread: become a copy of {@code committed} (as of the SYNC marker of
         * {@code term}, submitted as number {@code submission}), then replay on it the decisions of
         * this shard not in the copy that still reach the log: its batches submitted after the
         * marker and, within the same term, the batch it has not sent yet.
         */
        void resyncFrom(BucketTable committed, long term, long submission);

        /**
         * On the owner thread, once this node stopped deciding to hand the lead over: sends the
         * decisions not handed to the log yet; completes when everything this shard handed to the
         * log is committed, exceptionally if any of it failed.
         */
        CompletableFuture<Void> flushForHandOver();
    }

    private final RaftNode node;
    /** This node's part in the Raft group this replication is for. */
    private final RaftGroupMember member;
    /** How log lines name this node and group. */
    private final String name;
    private final ReplicatedBuckets buckets;
    private final LogSubmitter submitter;
    private final Map<String, InetSocketAddress> dataAddresses;
    private final int raftPortOffset;
    private List<? extends DecidingShard> shards = List.of();
    private volatile boolean leader;
    private volatile long readyTerm = -1;
    private volatile long leaderChanges;
    /** Until when (System.nanoTime) this leader may act alone: its leader lease, renewed from followers' replies. */
    private volatile long leaderLeaseUntilNanos = System.nanoTime();
    private final long leaderLeaseNanos;
    private volatile boolean leaderLeaseLapsed;
    /** The term in which this leader stopped deciding to hand the lead over on purpose (-1: none). */
    private volatile long handingOverTerm = -1;
    private volatile long handOverStartNanos;

    /**
     * @param group the node's Raft group this replication is for; {@code buckets} is its state machine
     * @param fastLingerNanos least time, in nanoseconds, between decision entries that carry FAST decisions only
     */
    public Replication(final RaftNode node, final int group, final ReplicatedBuckets buckets,
        final Map<String, InetSocketAddress> dataAddresses, final int raftPortOffset, final long fastLingerNanos)
    {
        this.raftPortOffset = raftPortOffset;
        this.leaderLeaseNanos = TimeUnit.MILLISECONDS.toNanos(node.config().leaderLeaseMillis());
        this.node = node;
        this.member = node.group(group);
        this.name = node.groupCount() == 1 ? node.nodeId() : node.nodeId() + " group " + group;
        this.buckets = buckets;
        this.submitter = new LogSubmitter(member::submit, "limiter-log-submit-" + group, fastLingerNanos, System::nanoTime);
        this.dataAddresses = dataAddresses;
        buckets.syncTarget(this);
        member.onPlannedHandOver(this);
        member.addLeaderListener((id, self) ->
        {
            leaderChanges++;
            checkLeadership(); // act at once; the watchdog repeats the same check every 20 ms
        });
    }

    public void shards(final List<? extends DecidingShard> shards)
    {
        this.shards = shards;
    }

    /** Starts watching leadership (the Raft node must be started). */
    public void start()
    {
        // Ratis does not always announce a change (a leader that steps down for want of a majority
        // has no successor to name), so leadership is also checked every 20 ms.
        watchdog = RETRIES.scheduleWithFixedDelay(this::checkLeadership, 20, 20, TimeUnit.MILLISECONDS);
    }

    /**
     * Reconciles this node's view with Ratis: on becoming leader of a term it stops deciding, appends
     * a SYNC marker for that term and decides only once that very marker is applied; on losing the
     * lead, or on a new term, it stops deciding at once. A marker that did not commit is re-sent.
     */
    private synchronized void checkLeadership()
    {
        if (closed)
        {
            return;
        }
        boolean raftLeader;
        long term;
        try
        {
            raftLeader = member.isRaftLeader();
            term = member.term();
        }
        catch (final RuntimeException e)
        {
            raftLeader = false;
            term = -1;
        }
        if (!raftLeader)
        {
            if (leader)
            {
                LOG.info("{}: no longer leading; not deciding", name);
            }
            leader = false;
            readyTerm = -1;
            return;
        }
        if (!leader || term != electedTerm)
        {
            leader = true;
            electedTerm = term;
            readyTerm = -1;
            syncSentAt = 0;
            // No follower has answered this term yet: only a leader lease that held and lapsed is worth a warning.
            leaderLeaseLapsed = true;
        }
        final boolean holds = leaderLeaseHolds(System.nanoTime());
        if (!holds && !leaderLeaseLapsed)
        {
            LOG.warn("{}: no majority answered within {} ms (or this node left the group): not deciding", name,
                TimeUnit.NANOSECONDS.toMillis(leaderLeaseNanos));
        }
        leaderLeaseLapsed = !holds;
        // Re-sent also while the seed has not applied: a leader decides only with policies in place.
        if ((readyTerm != electedTerm || !buckets.policies().bootstrapped()) &&
            System.nanoTime() - syncSentAt > TimeUnit.MILLISECONDS.toNanos(500))
        {
            syncSentAt = System.nanoTime();
            appendSyncMarker(term);
        }
    }

    private ScheduledFuture<?> watchdog;
    /** The term this node leads (valid while {@link #leader}); guarded by this for writes. */
    private volatile long electedTerm = -1;
    private long syncSentAt;

    private volatile PolicyCommand bootstrap;

    /**
     * The policy file this node seeds a new cluster with: proposed, before its SYNC marker, by a
     * leader whose replicated policy state is still empty (ignored once any seed was applied).
     */
    public void bootstrapWith(final PolicyCommand seed)
    {
        this.bootstrap = seed;
    }

    private void appendSyncMarker(final long term)
    {
        final PolicyCommand seed = bootstrap;
        if (seed != null && !buckets.policies().bootstrapped())
        {
            submitter.submit(number -> PolicyEntry.encode(seed)); // before the marker; its failure shows as a SYNC failure too
        }
        submitter.submit(submission -> new SyncEntry(term, node.nodeId(), submission).encode()).whenComplete((reply, failure) ->
        {
            if (failure != null)
            {
                // Not leader-ready yet, or lost the lead: the watchdog re-sends while this node still leads the term.
                synchronized (this)
                {
                    syncSentAt = 0;
                }
            }
        });
    }

    /** A batch of decisions did not reach the log while this node decides: resync before deciding again. */
    public synchronized void batchLost()
    {
        if (readyTerm >= 0)
        {
            LOG.warn("{}: a batch of decisions was not committed; re-syncing from the committed tables", name);
        }
        readyTerm = -1;
        syncSentAt = 0;
    }

    private static final ScheduledExecutorService RETRIES =
        Executors.newSingleThreadScheduledExecutor(r ->
        {
            final Thread thread = new Thread(r, "limiter-replication-retry");
            thread.setDaemon(true);
            return thread;
        });
    private volatile boolean closed;

    @Override
    public void syncFrom(final BucketTable[] committed, final long term, final long submission)
    {
        if (!leader || term != electedTerm)
        {
            return; // a marker of another term (replayed after a restart, or superseded): not ours to act on
        }
        final CountDownLatch copied = new CountDownLatch(shards.size());
        for (final DecidingShard shard : shards)
        {
            shard.owner().execute(() ->
            {
                try
                {
                    shard.resyncFrom(committed[shard.id()], term, submission);
                }
                finally
                {
                    copied.countDown();
                }
            });
        }
        try
        {
            if (!copied.await(30, TimeUnit.SECONDS))
            {
                LOG.error("{}: shards did not copy the committed tables within 30 s; not deciding in term {}", name, term);
                return;
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return;
        }
        if (leader && term == electedTerm)
        {
            member.rebaseLeaderClock(); // every entry before the marker is applied: continue after its last stamp
            readyTerm = term;
            LOG.info("{}: leading term {}, deciding from {} committed decisions", name, term, buckets.appliedDecisions());
        }
    }

    /**
     * Whether this node may decide now: it leads, its tables were synced for this term, it is not
     * handing the lead over, and its leader lease holds (a majority answered it within the lease,
     * and it is still a member). A few volatile reads and a clock read: cheap enough for every
     * frame; only an expired leader lease asks Ratis again.
     */
    public boolean canDecide()
    {
        final long ready = readyTerm;
        return leader && ready >= 0 && ready == electedTerm && ready != handingOverTerm && buckets.policies().bootstrapped() &&
            leaderLeaseHolds(System.nanoTime());
    }

    /** Whether this leader has stopped deciding to hand the lead to another member on purpose. */
    public boolean handingOver()
    {
        final long term = handingOverTerm;
        return term >= 0 && term == electedTerm && leader;
    }

    /**
     * A planned hand-over of the lead (to spread leaders): Ratis refuses new entries while it moves
     * the lead, so this leader first stops deciding for the term and gets every decision it
     * answered into the log: each shard sends its pending batch, the submitter sends without the
     * FAST linger, and the transfer is asked for once all of it is committed. Nothing answered is
     * then dropped by the move (a failover still may: the FAST bound).
     */
    @Override
    public CompletableFuture<Void> prepare()
    {
        final long term;
        try
        {
            term = member.term();
        }
        catch (final RuntimeException stopping)
        {
            return CompletableFuture.failedFuture(stopping);
        }
        handingOverTerm = term; // from here on no shard of this group decides in this term
        handOverStartNanos = System.nanoTime();
        LOG.info("{}: handing the lead over; not deciding until what was answered is committed", name);
        final List<CompletableFuture<CompletableFuture<Void>>> flushed = shards.stream()
            .map(shard -> CompletableFuture.supplyAsync(shard::flushForHandOver, shard.owner())).toList();
        return CompletableFuture.allOf(flushed.toArray(CompletableFuture[]::new)).thenCompose(handed ->
        {
            submitter.sendWithoutLinger();
            return CompletableFuture.allOf(flushed.stream().map(CompletableFuture::join).toArray(CompletableFuture[]::new));
        });
    }

    @Override
    public void ended(final boolean moved)
    {
        final long pausedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - handOverStartNanos);
        if (moved)
        {
            // This term is over for this node: handingOverTerm keeps it from deciding in it again.
            LOG.info("{}: lead handed over to {} ({} ms without deciding here)", name, leaderId(), pausedMillis);
        }
        else
        {
            LOG.info("{}: the lead was not handed over ({} ms without deciding); deciding again", name, pausedMillis);
            handingOverTerm = -1;
        }
        checkLeadership();
    }

    private boolean leaderLeaseHolds(final long now)
    {
        return now - leaderLeaseUntilNanos < 0 || renewLeaderLease(now);
    }

    /**
     * Renews the leader lease from when a majority last answered: a leader cut off from its
     * followers, or removed from the group, stops deciding within the leader lease
     * ({@link dev.limiter.raft.RaftNodeConfig#leaderLeaseMillis()}), before any other member can
     * have been elected, instead of when Ratis steps it down.
     */
    private boolean renewLeaderLease(final long now)
    {
        final long contact;
        try
        {
            contact = member.majorityContactNanos();
        }
        catch (final RuntimeException stopping)
        {
            return false;
        }
        if (contact == Long.MIN_VALUE)
        {
            return false;
        }
        final long until = contact + leaderLeaseNanos;
        leaderLeaseUntilNanos = until;
        return now - until < 0;
    }

    /** Cluster time to decide at (leader only). */
    public long clusterNanos()
    {
        return member.leaderClockNanos();
    }

    /**
     * Hands a shard's batch of decisions to the log, joined with the other shards' batches of this
     * group into one entry ({@link LogSubmitter}); {@link ShardBatch#committed()} completes when it
     * is committed and applied here. Batches and SYNC markers reach the log in the order they are
     * numbered.
     */
    public void append(final ShardBatch batch)
    {
        submitter.offer(batch);
    }

    /** Told the decisions carried by every DECISIONS entry this node hands to this group's log. */
    public void onDecisionEntry(final IntConsumer listener)
    {
        submitter.onDecisionEntry(listener);
    }

    /**
     * Where a frame this node refuses should go: the leader's data-plane address, or "" when there is
     * none to go to yet (during an election, or while this leader hands the lead over: the caller
     * waits a little and tries again rather than come back here at once).
     */
    public String redirectAddress()
    {
        return handingOver() ? "" : leaderAddress();
    }

    /** The minimum election timeout in milliseconds the Raft node runs with (its leader lease is 25 ms shorter). */
    public long electionTimeoutMillis()
    {
        return node.config().electionTimeoutMin().toMillis();
    }

    /** The leader's data-plane address ({@code host:port}), or "" when none is known. */
    public String leaderAddress()
    {
        final String id = leaderId();
        return id == null ? "" : members().getOrDefault(id, "");
    }

    /**
     * The members in force, by id, with their data-plane addresses (a member's Raft port is its
     * data port plus the offset), so that members added at run time are known too.
     */
    public Map<String, String> members()
    {
        final Map<String, String> members = new LinkedHashMap<>();
        try
        {
            member.members().forEach((id, raftAddress) -> members.put(id, HostPort.shifted(raftAddress, -raftPortOffset)));
        }
        catch (final RuntimeException e)
        {
            dataAddresses.forEach((id, a) -> members.put(id, a.getHostString() + ":" + a.getPort()));
        }
        return members;
    }

    /**
     * Makes {@code newMembers} (id to data-plane address, the complete new list) the members of
     * this group, wherever its leader is. Added members catch up from the log or a snapshot.
     */
    public CompletableFuture<Void> changeMembers(final Map<String, InetSocketAddress> newMembers)
    {
        final Map<String, InetSocketAddress> raft = new LinkedHashMap<>();
        newMembers.forEach((id, a) -> raft.put(id, new InetSocketAddress(a.getHostString(), a.getPort() + raftPortOffset)));
        return member.setMembers(raft);
    }

    @Override
    public NotLeaderException notLeader()
    {
        return new NotLeaderException(node.nodeId(), leaderId());
    }

    @Override
    public CompletableFuture<ByteBuffer> append(final PolicyCommand command)
    {
        final ByteBuffer entry = PolicyEntry.encode(command);
        return submitter.submit(number -> entry);
    }

    /**
     * Proposes this group's copy of its region's shares (another group than the control group; this
     * node leads it): completes when committed and applied here, exceptionally if it was not.
     */
    public CompletableFuture<ByteBuffer> copyRegionShares(final RegionShares shares)
    {
        if (group() == 0)
        {
            throw new IllegalStateException("the control group holds the region's shares themselves, not a copy");
        }
        final ByteBuffer entry = RegionSharesEntry.encode(shares);
        return submitter.submit(number -> entry);
    }

    /** The leader Ratis knows of now (null during an election), read live so it is never stale. */
    public String leaderId()
    {
        try
        {
            return member.leaderId();
        }
        catch (final RuntimeException e)
        {
            return null;
        }
    }

    @Override
    public boolean isLeader()
    {
        return leader;
    }

    public long leaderChanges()
    {
        return leaderChanges;
    }

    public RaftNode node()
    {
        return node;
    }

    /** This node's part in the group (term, applied index, snapshots). */
    public RaftGroupMember member()
    {
        return member;
    }

    /** The Raft group this replication is for (0 is the control group). */
    public int group()
    {
        return member.index();
    }

    public ReplicatedBuckets buckets()
    {
        return buckets;
    }

    @Override
    public void close() throws IOException
    {
        closed = true;
        leader = false;
        if (watchdog != null)
        {
            watchdog.cancel(false);
        }
        submitter.close();
        readyTerm = -1;
    }
}
