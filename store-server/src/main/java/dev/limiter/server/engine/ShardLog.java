package dev.limiter.server.engine;

import dev.limiter.server.cluster.DecisionsEntry;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.cluster.ShardBatch;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.table.BucketTable;
import io.netty.channel.EventLoop;
import org.agrona.DirectBuffer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;

/**
 * The decisions one shard's leader makes, on their way to the log: appended here and handed to the
 * shard's Raft group once per event-loop turn as a {@link ShardBatch}; the group joins the batches
 * of all its shards into few entries ({@code LogSubmitter}: group commit across shards, entries
 * grow with the load). A batch is cut at {@value #MAX_BATCH_BYTES} bytes, and a shard with
 * a bound of bytes handed and not committed ({@code ClusterConfig#maxUncommittedBytesPerShard}, 2 MiB) stops deciding (the log is
 * behind). Frames that hold STRICT decisions wait for the commit of their batch. Owned by the
 * shard's event loop.
 *
 * <p>A resync (the shard's table becomes a copy of the committed one, at a SYNC marker) keeps what
 * was answered: the batches of this shard that reach the log after the marker are replayed on the
 * copy, and so is the batch not handed over yet when the term is the same. Only a new term drops
 * what the old one had not handed over (answered FAST decisions then never commit: the FAST
 * bound, counted in {@code limiter_replication_decisions_dropped_total}).
 */
public final class ShardLog
{
    /** Kept small enough that neither a batch nor Ratis' copies of it are humongous objects for G1. */
    static final int MAX_BATCH_BYTES = 256 * 1024;
    /** Handed to the log and not committed yet: beyond this the shard refuses to decide (overloaded). */
    private final int maxUncommittedBytes;

    /** A batch handed to the log and not yet answered (compared by identity). */
    private static final class Batch
    {
        final ShardBatch handed;
        final List<FrameWork> waiters;
        final long epoch;
        final long startNanos;

        Batch(final ShardBatch handed, final List<FrameWork> waiters, final long epoch, final long startNanos)
        {
            this.handed = handed;
            this.waiters = waiters;
            this.epoch = epoch;
            this.startNanos = startNanos;
        }
    }

    private final int shard;
    private final EventLoop loop;
    private final Replication replication;
    private final ServerMetrics metrics;
    private final DecisionsEntry.Replayer replayer;
    private final Runnable flushTask = this::flush;
    /** The pending batch's section (the log format is DecisionsEntry's). */
    private final DecisionsEntry.SectionWriter section;
    private List<FrameWork> waiters = new ArrayList<>();
    /** Batches handed to the log and not yet answered, in the order they were handed over. */
    private final ArrayDeque<Batch> inFlight = new ArrayDeque<>();
    private long uncommittedBytes;
    /** {@link #saturated()} as last published by the owner thread, for the loops that route frames (any thread). */
    private volatile boolean behind;
    /** Decisions recorded since this log began (never reset): tells a frame whether it added any. */
    private long appended;
    private boolean flushScheduled;
    /** Bumped when a new term begins: completions of batches from before it are not this term's business. */
    private long epoch;
    /** The term of the latest resync: the pending decisions belong to it. */
    private long term = -1;
    private boolean abandoned;
    /** UTC minus cluster time for the pending section's decisions: one per section, chosen when it starts. */
    private long wallClockOffset;

    ShardLog(final int shard, final EventLoop loop, final Replication replication, final ServerMetrics metrics,
        final DecisionsEntry.Rates rates, final int maxUncommittedBytes, final boolean compact)
    {
        this.maxUncommittedBytes = maxUncommittedBytes;
        this.section = new DecisionsEntry.SectionWriter(compact, 64 * 1024);
        this.shard = shard;
        this.loop = loop;
        this.replication = replication;
        this.metrics = metrics;
        this.replayer = new DecisionsEntry.Replayer(rates);
    }

    /** Records one decision: key, policy, cost and the cluster time it was made at. */
    void append(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy, final int cost, final long time)
    {
        section.append(key, keyOffset, keyLength, policy, cost, time);
        recorded();
    }

    /** Records one decision whose grant took the lease {@code leaseId} (its id is random: replicas read it from the log). */
    void appendLeased(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy, final int cost, final long leaseId,
        final long time)
    {
        section.appendLeased(key, keyOffset, keyLength, policy, cost, leaseId, time);
        recorded();
    }

    /** Records one release: key, policy, the cost given back, the lease's id and the cluster time it was made at. */
    void appendRelease(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy, final int cost,
        final long leaseId, final long time)
    {
        section.appendRelease(key, keyOffset, keyLength, policy, cost, leaseId, time);
        recorded();
    }

    private void recorded()
    {
        appended++;
        if (section.bytes() >= MAX_BATCH_BYTES)
        {
            flush();
        }
    }

    /**
     * The wall-clock offset to decide with now: {@code current} when the pending section is empty
     * (it becomes the section's), else the section's own, so that every decision of a section was
     * made with the offset its header carries and replicas replay them alike.
     */
    long wallClockOffset(final long current)
    {
        if (section.count() == 0)
        {
            wallClockOffset = current;
        }
        return wallClockOffset;
    }

    /** Decisions recorded so far (owner thread). */
    long appended()
    {
        return appended;
    }

    /**
     * Whether this shard must stop deciding for now: too much it handed to the log is not committed
     * yet. Keeps the memory of a slow log bounded.
     */
    boolean saturated()
    {
        return uncommittedBytes >= maxUncommittedBytes;
    }

    /**
     * {@link #saturated()} as the owner thread last published it (any thread): lets the loop that
     * routes a frame refuse it whole before any shard decides part of it.
     */
    boolean behind()
    {
        return behind;
    }

    /** The frame completes for this shard when the batch holding its decisions commits. */
    void completeAfterCommit(final FrameWork work)
    {
        waiters.add(work);
    }

    /** Sends the batch soon (after the frames of this event-loop turn have added to it). */
    void scheduleFlush()
    {
        if (!flushScheduled && section.count() > 0)
        {
            flushScheduled = true;
            loop.execute(flushTask);
        }
    }

    private void flush()
    {
        flushScheduled = false;
        if (section.count() == 0 || abandoned)
        {
            return;
        }
        final int count = section.count();
        final ShardBatch handed = new ShardBatch(section.take(shard, wallClockOffset), count, !waiters.isEmpty());
        final Batch batch = new Batch(handed, waiters, epoch, System.nanoTime());
        waiters = new ArrayList<>();
        inFlight.addLast(batch);
        uncommittedBytes += handed.bytes();
        behind = saturated();
        replication.append(handed);
        handed.committed().whenComplete((ignored, failure) ->
        {
            try
            {
                loop.execute(() -> committed(batch, failure));
            }
            catch (final RejectedExecutionException stopping)
            {
                // The loop is gone: abandon() already released these frames before it stopped.
            }
        });
    }

    /**
     * For a planned hand-over of the lead, once the shard no longer decides (owner thread): sends
     * the pending batch now; completes when every batch this shard handed to the log is committed,
     * exceptionally if one of them fails.
     */
    CompletableFuture<Void> flushForHandOver()
    {
        flush();
        return CompletableFuture.allOf(inFlight.stream().map(batch -> batch.handed.committed()).toArray(CompletableFuture[]::new));
    }

    private void committed(final Batch batch, final Throwable failure)
    {
        if (!inFlight.remove(batch))
        {
            return; // released by abandon() when the node began to stop
        }
        uncommittedBytes -= batch.handed.bytes();
        behind = saturated();
        if (failure == null)
        {
            metrics.recordCommit(System.nanoTime() - batch.startNanos);
        }
        else
        {
            // Answered (FAST) but not committed: the tables will not hold them once resynced.
            metrics.decisionsDropped(batch.handed.decisions());
            if (batch.epoch == epoch)
            {
                // Decided here but not in the log: the deciding table is ahead of what was committed.
                // Stop deciding until a new SYNC marker copies the committed tables back.
                replication.batchLost();
            }
        }
        for (final FrameWork work : batch.waiters)
        {
            if (failure != null || batch.epoch != epoch)
            {
                work.refuseNotLeader(shard); // not known to be committed: the caller must not count on it
            }
            work.shardDone();
        }
    }

    /**
     * After {@code table} became a copy of the committed one at the SYNC marker of {@code newTerm}
     * (submitted as number {@code submission}): replays on it what this shard decided that is not
     * in the copy but still goes to the log, so that what callers were told stays charged.
     */
    void resync(final BucketTable table, final long newTerm, final long submission)
    {
        for (final Batch batch : inFlight)
        {
            if (batch.handed.submission() > submission)
            {
                replayer.replay(batch.handed.section(), table); // reaches the log after the marker (or has not been sent yet)
            }
        }
        if (newTerm == term)
        {
            if (section.count() > 0)
            {
                replayer.replay(section.pending(shard, wallClockOffset), table); // still to be sent, in this term
            }
            return;
        }
        // A new term: what the old one had not sent is dropped, and its STRICT frames refused.
        term = newTerm;
        epoch++;
        dropPending();
    }

    private void dropPending()
    {
        metrics.decisionsDropped(section.count());
        for (final FrameWork work : waiters)
        {
            work.refuseNotLeader(shard);
            work.shardDone();
        }
        waiters = new ArrayList<>();
        section.clear();
    }

    /**
     * The node is stopping (on the owner loop): every frame still waiting for a commit is answered
     * NOT_LEADER now, exactly once, and nothing more is sent to the log.
     */
    void abandon()
    {
        abandoned = true;
        epoch++;
        dropPending();
        for (final Batch batch : inFlight)
        {
            for (final FrameWork work : batch.waiters)
            {
                work.refuseNotLeader(shard);
                work.shardDone();
            }
        }
        inFlight.clear();
        uncommittedBytes = 0;
        behind = false;
    }
}
