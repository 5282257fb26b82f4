package dev.limiter.server.engine;

import dev.limiter.server.cluster.DecisionsEntry;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.table.BucketTable;
import io.netty.channel.EventLoop;
import org.agrona.DirectBuffer;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;

/**
 * Group commit for one shard: the decisions its leader makes are appended here and travel to the
 * log as one entry per batch ({@link DecisionsEntry}). A batch holding a STRICT decision is sent as
 * soon as fewer than {@value #MAX_IN_FLIGHT} are in flight, one of FAST decisions only when none
 * is, so under load decisions pile up while the previous entries commit and the batch size
 * follows the commit latency; a batch is cut at {@value #MAX_BATCH_BYTES} bytes (kept small enough
 * that neither it nor Ratis' copies are humongous objects for G1), and full batches may go out with
 * up to {@value #MAX_IN_FLIGHT_FULL} in flight. Frames that hold STRICT decisions wait for the
 * commit of their batch. Owned by the shard's event loop.
 *
 * <p>A resync (the shard's table becomes a copy of the committed one, at a SYNC marker) keeps what
 * was answered: the batches this log submitted after the marker are replayed on the copy (they
 * reach the log after it), and so is the batch not sent yet when the term is the same. Only a new
 * term drops what the old one had not sent (answered FAST decisions then never commit: the FAST
 * bound, counted in {@code limiter_replication_decisions_dropped_total}).
 */
public final class ShardLog
{
    static final int MAX_IN_FLIGHT = 2;
    static final int MAX_BATCH_BYTES = 256 * 1024;
    /** Full batches may go out beyond {@link #MAX_IN_FLIGHT}, up to this many in flight. */
    static final int MAX_IN_FLIGHT_FULL = 8;

    /** A batch handed to the log and not yet answered (compared by identity). */
    private static final class Batch
    {
        final long number;
        final ByteBuffer entry;
        final List<FrameWork> waiters;
        final int decisions;
        final long epoch;
        final long startNanos;

        Batch(final long number, final ByteBuffer entry, final List<FrameWork> waiters, final int decisions, final long epoch,
            final long startNanos)
        {
            this.number = number;
            this.entry = entry;
            this.waiters = waiters;
            this.decisions = decisions;
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
    private byte[] buffer = new byte[64 * 1024];
    private ByteBuffer view = ByteBuffer.wrap(buffer);
    private int position = DecisionsEntry.HEADER;
    private int count;
    private List<FrameWork> waiters = new ArrayList<>();
    /** Batches handed to the log and not yet answered, in the order they were submitted. */
    private final ArrayDeque<Batch> inFlight = new ArrayDeque<>();
    /** Decisions recorded since this log began (never reset): tells a frame whether it added any. */
    private long appended;
    private boolean flushScheduled;
    /** Bumped when a new term begins: completions of batches from before it are not this term's business. */
    private long epoch;
    /** The term of the latest resync: the pending decisions belong to it. */
    private long term = -1;
    private boolean abandoned;

    ShardLog(final int shard, final EventLoop loop, final Replication replication, final ServerMetrics metrics,
        final DecisionsEntry.Rates rates)
    {
        this.shard = shard;
        this.loop = loop;
        this.replication = replication;
        this.metrics = metrics;
        this.replayer = new DecisionsEntry.Replayer(rates);
    }

    /** Records one decision: key, policy, cost and the cluster time it was made at. */
    void append(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy, final int cost, final long time)
    {
        final int needed = DecisionsEntry.recordLength(keyLength);
        if (position + needed > buffer.length)
        {
            buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, position + needed));
            view = ByteBuffer.wrap(buffer);
        }
        DecisionsEntry.putRecord(view, buffer, position, policy, cost, time, key, keyOffset, keyLength);
        position += needed;
        count++;
        appended++;
        if (position >= MAX_BATCH_BYTES)
        {
            flush();
        }
    }

    /** Decisions recorded so far (owner thread). */
    long appended()
    {
        return appended;
    }

    /**
     * Whether this shard must stop deciding for now: the batch being filled is full and the most
     * batches allowed are already waiting for the log. Keeps every batch far below Ratis' entry
     * size limit and the memory of a slow log bounded.
     */
    boolean saturated()
    {
        return position >= MAX_BATCH_BYTES && inFlight.size() >= MAX_IN_FLIGHT_FULL;
    }

    /** The frame completes for this shard when the batch holding its decisions commits. */
    void completeAfterCommit(final FrameWork work)
    {
        waiters.add(work);
    }

    /** Sends the batch soon (after the frames of this event-loop turn have added to it). */
    void scheduleFlush()
    {
        if (!flushScheduled && count > 0)
        {
            flushScheduled = true;
            loop.execute(flushTask);
        }
    }

    private void flush()
    {
        flushScheduled = false;
        final boolean full = position >= MAX_BATCH_BYTES;
        // Nobody waits for a batch of FAST decisions only: it goes out when nothing is in flight,
        // so light load makes fewer, fuller entries (Ratis costs about a millisecond of CPU per
        // entry across the cluster here). A STRICT waiter lets a second batch overlap the first.
        final int maxInFlight = full ? MAX_IN_FLIGHT_FULL : waiters.isEmpty() ? 1 : MAX_IN_FLIGHT;
        if (count == 0 || abandoned || inFlight.size() >= maxInFlight)
        {
            return; // a commit completing will send it
        }
        DecisionsEntry.putHeader(view, shard, count);
        final ByteBuffer entry = ByteBuffer.wrap(Arrays.copyOf(buffer, position));
        final Replication.Submission submission = replication.append(entry.duplicate());
        final Batch batch = new Batch(submission.number(), entry, waiters, count, epoch, System.nanoTime());
        waiters = new ArrayList<>();
        position = DecisionsEntry.HEADER;
        count = 0;
        inFlight.addLast(batch);
        submission.committed().whenComplete((reply, failure) ->
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

    private void committed(final Batch batch, final Throwable failure)
    {
        if (!inFlight.remove(batch))
        {
            return; // released by abandon() when the node began to stop
        }
        if (failure == null)
        {
            metrics.recordCommit(batch.decisions, System.nanoTime() - batch.startNanos);
        }
        else
        {
            // Answered (FAST) but not committed: the tables will not hold them once resynced.
            metrics.decisionsDropped(batch.decisions);
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
        flush();
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
            if (batch.number > submission)
            {
                replayer.replay(batch.entry.duplicate(), table); // reaches the log after the marker
            }
        }
        if (newTerm == term)
        {
            if (count > 0)
            {
                DecisionsEntry.putHeader(view, shard, count);
                replayer.replay(ByteBuffer.wrap(buffer, 0, position), table); // still to be sent, in this term
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
        metrics.decisionsDropped(count);
        for (final FrameWork work : waiters)
        {
            work.refuseNotLeader(shard);
            work.shardDone();
        }
        waiters = new ArrayList<>();
        position = DecisionsEntry.HEADER;
        count = 0;
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
    }
}
