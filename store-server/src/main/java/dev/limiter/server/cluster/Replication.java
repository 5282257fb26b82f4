package dev.limiter.server.cluster;

import dev.limiter.raft.RaftNode;
import dev.limiter.server.table.BucketTable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

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
public final class Replication implements ReplicatedBuckets.SyncTarget, AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(Replication.class);

    /** A shard's deciding side, as the sync sees it. */
    public interface DecidingShard
    {
        int id();

        Executor owner();

        /** On the owner thread: become a copy of {@code committed}, dropping any pending batch. */
        void resyncFrom(BucketTable committed);
    }

    private final RaftNode node;
    private final ReplicatedBuckets buckets;
    private final Map<String, InetSocketAddress> dataAddresses;
    private final int raftPortOffset;
    private List<? extends DecidingShard> shards = List.of();
    private volatile boolean leader;
    private volatile long readyTerm = -1;
    private volatile String leaderId;
    private volatile long leaderChanges;
    private Consumer<String> leaderObserver = id -> { };

    public Replication(final RaftNode node, final ReplicatedBuckets buckets, final Map<String, InetSocketAddress> dataAddresses,
        final int raftPortOffset)
    {
        this.raftPortOffset = raftPortOffset;
        this.node = node;
        this.buckets = buckets;
        this.dataAddresses = dataAddresses;
        buckets.syncTarget(this);
        node.addLeaderListener((id, self) ->
        {
            leaderId = id;
            leaderChanges++;
            leader = self;
            if (!self)
            {
                readyTerm = -1;
            }
            else
            {
                appendSyncMarker();
            }
            leaderObserver.accept(id);
        });
    }

    public void shards(final List<? extends DecidingShard> shards)
    {
        this.shards = shards;
    }

    public void onLeaderChange(final Consumer<String> observer)
    {
        this.leaderObserver = observer;
    }

    public void start() throws IOException
    {
        node.start();
        // Ratis does not always announce losing leadership (a leader that steps down for want of a
        // majority has no successor to name), so leadership and term are also checked every 20 ms.
        watchdog = RETRIES.scheduleWithFixedDelay(this::checkLeadership, 20, 20, TimeUnit.MILLISECONDS);
    }

    private void checkLeadership()
    {
        if (!leader || closed)
        {
            return;
        }
        try
        {
            if (!node.isRaftLeader() || (readyTerm >= 0 && node.term() != readyTerm))
            {
                leader = false;
                readyTerm = -1;
                LOG.info("{}: no longer leading; not deciding", node.nodeId());
            }
        }
        catch (final RuntimeException e)
        {
            leader = false;
            readyTerm = -1;
        }
    }

    private java.util.concurrent.ScheduledFuture<?> watchdog;

    private void appendSyncMarker()
    {
        final long term;
        try
        {
            term = node.term();
        }
        catch (final RuntimeException e)
        {
            return; // stopping
        }
        appendSyncMarker(term, 0);
    }

    /**
     * A leader is told of its election before it can append (its first entry of the term must
     * commit first), so the marker is retried every 10 ms while this node still leads that term.
     */
    private void appendSyncMarker(final long term, final int attempt)
    {
        if (!leader || closed)
        {
            return;
        }
        node.submit(ReplicatedBuckets.syncEntry(term, node.nodeId())).whenComplete((reply, failure) ->
        {
            if (failure == null)
            {
                return;
            }
            long current = -1;
            try
            {
                current = node.term();
            }
            catch (final RuntimeException e)
            {
                return; // stopping
            }
            if (leader && current == term && attempt < 3000)
            {
                RETRIES.schedule(() -> appendSyncMarker(term, attempt + 1), 10, TimeUnit.MILLISECONDS);
            }
            else
            {
                LOG.info("{}: sync marker for term {} not committed ({}); not deciding in that term", node.nodeId(), term,
                    failure.getCause() != null ? failure.getCause().getMessage() : failure.getMessage());
            }
        });
    }

    private static final java.util.concurrent.ScheduledExecutorService RETRIES =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r ->
        {
            final Thread thread = new Thread(r, "limiter-replication-retry");
            thread.setDaemon(true);
            return thread;
        });
    private volatile boolean closed;

    @Override
    public void syncFrom(final BucketTable[] committed, final long term)
    {
        if (!leader)
        {
            return;
        }
        final CountDownLatch copied = new CountDownLatch(shards.size());
        for (final DecidingShard shard : shards)
        {
            shard.owner().execute(() ->
            {
                try
                {
                    shard.resyncFrom(committed[shard.id()]);
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
                LOG.error("{}: shards did not copy the committed tables within 30 s; not deciding in term {}", node.nodeId(), term);
                return;
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return;
        }
        if (leader)
        {
            readyTerm = term;
            LOG.info("{}: leading term {}, deciding from {} committed decisions", node.nodeId(), term, buckets.appliedDecisions());
        }
    }

    /** Whether this node may decide now. A volatile read: cheap enough for every frame. */
    public boolean canDecide()
    {
        return leader && readyTerm >= 0;
    }

    /** Cluster time to decide at (leader only). */
    public long clusterNanos()
    {
        return node.leaderClockNanos();
    }

    /**
     * Appends a batch of decisions to the log; completes when it is committed and applied here.
     * Handing the entry to Ratis takes its locks (shared with its RPC threads), so that happens on
     * a thread of its own: an event loop never waits for Ratis.
     */
    public CompletableFuture<ByteBuffer> append(final ByteBuffer batch)
    {
        try
        {
            return CompletableFuture.supplyAsync(() -> node.submit(batch), submitter).thenCompose(f -> f);
        }
        catch (final java.util.concurrent.RejectedExecutionException stopping)
        {
            return CompletableFuture.failedFuture(stopping);
        }
    }

    private final java.util.concurrent.ExecutorService submitter = java.util.concurrent.Executors.newSingleThreadExecutor(r ->
    {
        final Thread thread = new Thread(r, "limiter-log-submit");
        thread.setDaemon(true);
        return thread;
    });

    /** The leader's data-plane address ({@code host:port}), or "" when none is known. */
    public String leaderAddress()
    {
        final String id = leaderId;
        return id == null ? "" : members().getOrDefault(id, "");
    }

    /**
     * The members in force, by id, with their data-plane addresses (a member's Raft port is its
     * data port plus the offset), so that members added at run time are known too.
     */
    public Map<String, String> members()
    {
        final Map<String, String> members = new java.util.LinkedHashMap<>();
        try
        {
            node.members().forEach((id, raftAddress) ->
            {
                final int colon = raftAddress.lastIndexOf(':');
                members.put(id, raftAddress.substring(0, colon) + ":" + (Integer.parseInt(raftAddress.substring(colon + 1)) - raftPortOffset));
            });
        }
        catch (final RuntimeException e)
        {
            dataAddresses.forEach((id, a) -> members.put(id, a.getHostString() + ":" + a.getPort()));
        }
        return members;
    }

    /**
     * Makes {@code dataAddresses} (id to data-plane address, the complete new list) the members;
     * run on the leader. Added members catch up from the log or a snapshot.
     */
    public CompletableFuture<Void> changeMembers(final Map<String, InetSocketAddress> newMembers)
    {
        final Map<String, InetSocketAddress> raft = new java.util.LinkedHashMap<>();
        newMembers.forEach((id, a) -> raft.put(id, new InetSocketAddress(a.getHostString(), a.getPort() + raftPortOffset)));
        return node.setMembers(raft);
    }

    public String leaderId()
    {
        return leaderId;
    }

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
        submitter.shutdown();
        readyTerm = -1;
        node.close();
    }
}
