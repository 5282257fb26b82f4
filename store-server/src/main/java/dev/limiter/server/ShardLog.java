package dev.limiter.server;

import dev.limiter.server.cluster.Replication;
import io.netty.channel.EventLoop;
import org.agrona.DirectBuffer;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Group commit for one shard: the decisions its leader makes are appended here and travel to the
 * log as one entry per batch. A batch holding a STRICT decision is sent as soon as fewer than
 * {@value #MAX_IN_FLIGHT} are in flight, one of FAST decisions only when none is, so under load
 * decisions pile up while the previous entries commit and the batch size
 * follows the commit latency; a batch is cut at {@value #MAX_BATCH_BYTES} bytes (kept small enough
 * that neither it nor Ratis' copies are humongous objects for G1), and full batches may go out with
 * up to {@value #MAX_IN_FLIGHT_FULL} in flight. Frames that
 * hold STRICT decisions wait for the commit of their batch. Owned by the shard's event loop.
 */
final class ShardLog
{
    static final int MAX_IN_FLIGHT = 2;
    static final int MAX_BATCH_BYTES = 256 * 1024;
    /** Full batches may go out beyond {@link #MAX_IN_FLIGHT}, up to this many in flight. */
    static final int MAX_IN_FLIGHT_FULL = 8;
    private static final int HEADER = dev.limiter.server.cluster.ReplicatedBuckets.DECISIONS_HEADER;

    private final int shard;
    private final EventLoop loop;
    private final Replication replication;
    private final ServerMetrics metrics;
    private final Runnable flushTask = this::flush;
    private byte[] buffer = new byte[64 * 1024];
    private ByteBuffer view = ByteBuffer.wrap(buffer);
    private int position = HEADER;
    private int count;
    private List<FrameWork> waiters = new ArrayList<>();
    private int inFlight;
    private boolean flushScheduled;
    /** Bumped on every resync: completions of batches from before it are not this term's business. */
    private long epoch;
    /** Waiters of batches handed to the log and not yet answered, so that stopping can release them. */
    private final java.util.Set<List<FrameWork>> inFlightWaiters = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    private boolean abandoned;

    ShardLog(final int shard, final EventLoop loop, final Replication replication, final ServerMetrics metrics)
    {
        this.shard = shard;
        this.loop = loop;
        this.replication = replication;
        this.metrics = metrics;
    }

    /** Records one decision: key, policy, cost and the cluster time it was made at. */
    void append(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy, final int cost, final long time)
    {
        final int needed = 16 + keyLength;
        if (position + needed > buffer.length)
        {
            buffer = java.util.Arrays.copyOf(buffer, Math.max(buffer.length * 2, position + needed));
            view = ByteBuffer.wrap(buffer);
        }
        view.putShort(position, (short)policy);
        view.putInt(position + 2, cost);
        view.putLong(position + 6, time);
        view.putShort(position + 14, (short)keyLength);
        key.getBytes(keyOffset, buffer, position + 16, keyLength);
        position += needed;
        count++;
        if (position >= MAX_BATCH_BYTES)
        {
            flush();
        }
    }

    /**
     * Whether this shard must stop deciding for now: the batch being filled is full and the most
     * batches allowed are already waiting for the log. Keeps every batch far below Ratis' entry
     * size limit and the memory of a slow log bounded.
     */
    boolean saturated()
    {
        return position >= MAX_BATCH_BYTES && inFlight >= MAX_IN_FLIGHT_FULL;
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
        if (count == 0 || abandoned || inFlight >= maxInFlight)
        {
            return; // a commit completing will send it
        }
        view.put(0, dev.limiter.server.cluster.ReplicatedBuckets.DECISIONS);
        view.putShort(1, (short)shard);
        view.putInt(3, count);
        view.putLong(7, 0L); // reserved
        final ByteBuffer entry = ByteBuffer.wrap(java.util.Arrays.copyOf(buffer, position));
        final List<FrameWork> batchWaiters = waiters;
        final int decisions = count;
        final long batchEpoch = epoch;
        final long start = System.nanoTime();
        waiters = new ArrayList<>();
        position = HEADER;
        count = 0;
        inFlight++;
        inFlightWaiters.add(batchWaiters);
        replication.append(entry).whenComplete((reply, failure) ->
        {
            try
            {
                loop.execute(() -> committed(batchWaiters, decisions, batchEpoch, start, failure));
            }
            catch (final java.util.concurrent.RejectedExecutionException stopping)
            {
                // The loop is gone: abandon() already released these frames before it stopped.
            }
        });
    }

    private void committed(final List<FrameWork> batchWaiters, final int decisions, final long batchEpoch, final long start,
        final Throwable failure)
    {
        if (!inFlightWaiters.remove(batchWaiters))
        {
            return; // released by abandon() when the node began to stop
        }
        inFlight--;
        if (failure == null)
        {
            metrics.recordCommit(decisions, System.nanoTime() - start);
        }
        else if (batchEpoch == epoch)
        {
            // Decided here but not in the log: the deciding table is ahead of what was committed.
            // Stop deciding until a new SYNC marker copies the committed tables back.
            replication.batchLost();
        }
        for (final FrameWork work : batchWaiters)
        {
            if (failure != null || batchEpoch != epoch)
            {
                work.notLeader = true; // not known to be committed: the caller must not count on it
            }
            work.shardDone();
        }
        flush();
    }

    /** A new term: pending decisions of the old one are dropped and their STRICT frames refused. */
    void dropPending()
    {
        epoch++;
        for (final FrameWork work : waiters)
        {
            work.notLeader = true;
            work.shardDone();
        }
        waiters = new ArrayList<>();
        position = HEADER;
        count = 0;
    }

    /**
     * The node is stopping (on the owner loop): every frame still waiting for a commit is answered
     * NOT_LEADER now, exactly once, and nothing more is sent to the log.
     */
    void abandon()
    {
        abandoned = true;
        dropPending();
        for (final List<FrameWork> batch : inFlightWaiters)
        {
            for (final FrameWork work : batch)
            {
                work.notLeader = true;
                work.shardDone();
            }
        }
        inFlightWaiters.clear();
    }

    int inFlight()
    {
        return inFlight;
    }
}
