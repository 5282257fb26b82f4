package dev.limiter.server.cluster;

import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.IntConsumer;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;

/**
 * The one way entries enter a Raft group's log from this node: on a thread of its own (handing an
 * entry to Ratis takes locks shared with its RPC threads, and an event loop never waits for them),
 * numbered in the order they are handed over, so a SYNC marker knows which batches follow it.
 *
 * <p>Group commit across shards: the decision batches of all the shards of the group are joined
 * into one DECISIONS entry, and the number of such entries in flight is kept small, because what a
 * Raft entry costs (appends, RPCs, fsyncs and wake-ups on every member) does not depend on how
 * many decisions it carries. FAST-only batches go out when no decision entry is in flight; a batch
 * a STRICT caller waits for goes out when no other entry holding such a batch is in flight (it may
 * overtake one FAST-only entry), so decisions pile up while an entry commits and entries grow with
 * the load instead of multiplying with the shards or the callers (a second STRICT entry in flight
 * would take CPU from the first on the same cores, so neither commits sooner; docs/cluster.md, "One
 * STRICT entry in flight"). An entry is cut at {@value #MAX_ENTRY_BYTES} bytes (small enough
 * that neither it nor Ratis' copies are humongous objects for G1), and while a full entry's worth
 * waits, up to {@value #MAX_IN_FLIGHT_FULL} may be in flight. Markers and policy commands go out
 * at once, in their order among the batches.
 *
 * <p>The FAST linger: a FAST-only entry also waits until the linger has passed since the previous
 * decision entry left. At light load a commit is quicker than the gap between decisions, so
 * without it nearly every decision would be an entry of its own, and an entry costs the members
 * CPU whatever it carries; a FAST caller never waits for the entry, so the linger
 * costs no latency, only a few more milliseconds of uncommitted decisions (the FAST failover bound
 * counts the uncommitted window).
 *
 * <p>While FAST-only batches wait for an entry in flight or for the linger, the thread already has
 * a wake-up coming (the entry's completion or the linger's end) that takes whatever was handed
 * over, so a shard handing over another FAST-only batch does not wake it, unless what waits would
 * then reach a full entry. At light load that is most hand-overs: each wake-up of a sleeping thread
 * costs tens of microseconds of CPU on a virtual machine.
 */
final class LogSubmitter
{
    /** Decision entries in flight at once while less than a full entry's worth waits: one FAST-only, one for STRICT callers. */
    static final int MAX_IN_FLIGHT = 2;
    static final int MAX_IN_FLIGHT_FULL = 8;
    static final int MAX_ENTRY_BYTES = 256 * 1024;

    private final Function<ByteBuffer, CompletableFuture<ByteBuffer>> log;
    private final ScheduledExecutorService thread;
    private final long fastLingerNanos;
    private final LongSupplier nanoClock;
    private final ManyToOneConcurrentLinkedQueue<ShardBatch> offered = new ManyToOneConcurrentLinkedQueue<>();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    /** Bytes of the batches handed over and not yet taken by the thread. */
    private final AtomicLong offeredBytes = new AtomicLong();
    /**
     * How many bytes of FAST-only batches may be handed over without waking the thread: the room
     * left below a full entry while it waits with a wake-up coming, else 0 (wake it).
     */
    private volatile long quietRoom;
    /** Set by {@link #close()}: a batch handed over from then on is refused by its own hand-over. */
    private volatile boolean closed;
    private final RejectedExecutionException refused = new RejectedExecutionException("the log submitter is closed");
    private final Runnable drain = this::drain;
    private volatile IntConsumer entryDecisions = decisions -> { };

    // Owned by the submitter thread:
    private final ArrayDeque<ShardBatch> waiting = new ArrayDeque<>();
    private int waitingBytes;
    private int waitingAwaited;
    private int decisionEntriesInFlight;
    /** Of those, the ones holding a batch a STRICT caller waits for. */
    private int awaitedEntriesInFlight;
    private long submissions;
    /** When the latest decision entry left (at first, a linger ago: the first goes at once). */
    private long lastDecisionEntryNanos;
    private boolean lingerWakeUpScheduled;
    /** Set by {@link #sendWithoutLinger()}: what waits goes as soon as a slot is free, until nothing waits. */
    private boolean lingerWaived;
    private long drains;
    /** Set on the thread by the task {@link #close()} queues: later tasks send nothing and fail what they find. */
    private boolean stopped;
    private final Runnable lingerEnded = this::lingerEnded;

    /**
     * @param log   hands one entry to the log; completes when it is committed and applied here
     * @param name  the submitter thread's name
     */
    LogSubmitter(final Function<ByteBuffer, CompletableFuture<ByteBuffer>> log, final String name)
    {
        this(log, name, 0, System::nanoTime);
    }

    /**
     * @param fastLingerNanos least time, in nanoseconds, between a decision entry and the next one
     *                        that carries FAST decisions only; 0 sends as soon as none is in flight
     * @param nanoClock       the clock the linger is measured on (System::nanoTime but in tests)
     */
    LogSubmitter(final Function<ByteBuffer, CompletableFuture<ByteBuffer>> log, final String name, final long fastLingerNanos,
        final LongSupplier nanoClock)
    {
        if (fastLingerNanos < 0)
        {
            throw new IllegalArgumentException("the FAST linger must be 0 or more nanoseconds, was " + fastLingerNanos);
        }
        this.log = log;
        this.fastLingerNanos = fastLingerNanos;
        this.nanoClock = nanoClock;
        this.lastDecisionEntryNanos = nanoClock.getAsLong() - fastLingerNanos;
        this.thread = Executors.newSingleThreadScheduledExecutor(r ->
        {
            final Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    /** Told the decisions carried by every DECISIONS entry this node hands to the log. */
    void onDecisionEntry(final IntConsumer listener)
    {
        this.entryDecisions = listener;
    }

    /**
     * Sends an entry built from its place in the order of submissions (a SYNC marker names its
     * own), without waiting for a slot.
     */
    CompletableFuture<ByteBuffer> submit(final LongFunction<ByteBuffer> entry)
    {
        final CompletableFuture<ByteBuffer> committed = new CompletableFuture<>();
        try
        {
            thread.execute(() ->
            {
                try
                {
                    if (stopped)
                    {
                        committed.completeExceptionally(refused);
                        return;
                    }
                    forward(log(entry.apply(++submissions)), committed);
                }
                catch (final RuntimeException e)
                {
                    committed.completeExceptionally(e);
                }
            });
        }
        catch (final RejectedExecutionException stopping)
        {
            committed.completeExceptionally(stopping);
        }
        return committed;
    }

    /** Hands a shard's batch to the log (any thread); its {@link ShardBatch#committed()} tells the outcome. */
    void offer(final ShardBatch batch)
    {
        offered.offer(batch);
        // Queued before quietRoom and closed are read: a thread that clears quietRoom, or a close()
        // that sets closed, and then polls sees the batch. The queue links a node with a release
        // store; the addAndGet after it is a full fence on HotSpot (x86, AArch64), which keeps that
        // store ahead of the two reads.
        final long pendingBytes = offeredBytes.addAndGet(batch.bytes());
        if (closed)
        {
            batch.committed().completeExceptionally(refused); // whoever polls it later fails it again: no effect
            return;
        }
        final long room = quietRoom;
        if (!batch.awaited() && room > 0 && pendingBytes < room)
        {
            return; // the wake-up already coming takes it
        }
        if (drainScheduled.compareAndSet(false, true))
        {
            try
            {
                thread.execute(drain);
            }
            catch (final RejectedExecutionException stopping)
            {
                // Only after close() (closed was set after this batch was queued): its task fails the batch.
                drainScheduled.set(false);
            }
        }
    }

    /**
     * Sends the batches handed over before this call without waiting for the FAST linger (for a
     * planned hand-over of the lead: what was answered reaches the log at once). Any thread.
     */
    void sendWithoutLinger()
    {
        try
        {
            thread.execute(() ->
            {
                lingerWaived = true;
                takeOfferedAndSend();
            });
        }
        catch (final RejectedExecutionException stopping)
        {
            // Closed: what still waits was failed by close().
        }
    }

    private void drain()
    {
        drainScheduled.set(false);
        drains++;
        takeOfferedAndSend();
    }

    /** Times a hand-over woke the thread (read it after a round trip through the thread: tests). */
    long drains()
    {
        return drains;
    }

    /** Every turn of the thread that may send: takes what was handed over, sends what may go, says whether it can wait quietly. */
    private void takeOfferedAndSend()
    {
        if (stopped)
        {
            failOffered(refused);
            return;
        }
        quietRoom = 0;
        takeOffered();
        quietRoom = sendWhileAllowed() ? MAX_ENTRY_BYTES - waitingBytes : 0;
    }

    /** Moves what the shards handed over into the waiting line (this thread). */
    private void takeOffered()
    {
        ShardBatch batch;
        int taken = 0;
        while ((batch = offered.poll()) != null)
        {
            waiting.addLast(batch);
            waitingBytes += batch.bytes();
            waitingAwaited += batch.awaited() ? 1 : 0;
            taken += batch.bytes();
        }
        if (taken > 0)
        {
            offeredBytes.addAndGet(-taken);
        }
    }

    /**
     * Sends entries while the rules allow.
     *
     * @return whether only FAST-only batches less than a full entry wait, with a wake-up coming (an
     *         entry in flight completing, or the linger's end)
     */
    private boolean sendWhileAllowed()
    {
        while (!waiting.isEmpty())
        {
            if (waitingBytes >= MAX_ENTRY_BYTES)
            {
                if (decisionEntriesInFlight >= MAX_IN_FLIGHT_FULL)
                {
                    return false; // an entry completing sends what waits
                }
            }
            else if (waitingAwaited > 0)
            {
                if (awaitedEntriesInFlight > 0 || decisionEntriesInFlight >= MAX_IN_FLIGHT)
                {
                    return false; // the STRICT entry in flight completing sends what waits
                }
            }
            else if (decisionEntriesInFlight > 0 || lingering())
            {
                return true; // an entry completing, or the linger's wake-up, sends what waits, unless a STRICT batch comes first
            }
            send();
        }
        lingerWaived = false;
        return decisionEntriesInFlight > 0; // nothing waits; a completion to come takes what is handed over meanwhile
    }

    /** Whether a FAST-only entry must wait for the linger; if so, a wake-up is scheduled for its end. */
    private boolean lingering()
    {
        if (fastLingerNanos == 0 || lingerWaived)
        {
            return false;
        }
        final long remaining = lastDecisionEntryNanos + fastLingerNanos - nanoClock.getAsLong();
        if (remaining <= 0)
        {
            return false;
        }
        if (!lingerWakeUpScheduled)
        {
            lingerWakeUpScheduled = true;
            try
            {
                thread.schedule(lingerEnded, remaining, TimeUnit.NANOSECONDS);
            }
            catch (final RejectedExecutionException stopping)
            {
                // Closed: what still waits was failed by close().
            }
        }
        return true;
    }

    private void lingerEnded()
    {
        lingerWakeUpScheduled = false;
        takeOfferedAndSend(); // what was handed over meanwhile leaves too, even if its drain is still queued
    }

    private void send()
    {
        final List<ShardBatch> parts = new ArrayList<>();
        int bytes = 0;
        int decisions = 0;
        boolean awaited = false;
        while (!waiting.isEmpty() && (parts.isEmpty() || bytes + waiting.peekFirst().bytes() <= MAX_ENTRY_BYTES))
        {
            final ShardBatch batch = waiting.pollFirst();
            parts.add(batch);
            bytes += batch.bytes();
            decisions += batch.decisions();
            waitingBytes -= batch.bytes();
            waitingAwaited -= batch.awaited() ? 1 : 0;
            awaited |= batch.awaited();
        }
        final ByteBuffer entry;
        if (parts.size() == 1)
        {
            entry = parts.get(0).section();
        }
        else
        {
            entry = ByteBuffer.allocate(bytes);
            for (final ShardBatch part : parts)
            {
                entry.put(part.section()); // sections back to back: DecisionsEntry's layout
            }
            entry.flip();
        }
        final long number = ++submissions;
        for (final ShardBatch part : parts)
        {
            part.submitted(number);
        }
        decisionEntriesInFlight++;
        final int awaitedEntry = awaited ? 1 : 0;
        awaitedEntriesInFlight += awaitedEntry;
        lastDecisionEntryNanos = nanoClock.getAsLong();
        entryDecisions.accept(decisions);
        log(entry).whenComplete((reply, failure) ->
        {
            for (final ShardBatch part : parts)
            {
                if (failure == null)
                {
                    part.committed().complete(null);
                }
                else
                {
                    part.committed().completeExceptionally(failure);
                }
            }
            try
            {
                thread.execute(() ->
                {
                    decisionEntriesInFlight--;
                    awaitedEntriesInFlight -= awaitedEntry;
                    takeOfferedAndSend();
                });
            }
            catch (final RejectedExecutionException stopping)
            {
                // Closed: what still waits was failed by close().
            }
        });
    }

    private CompletableFuture<ByteBuffer> log(final ByteBuffer entry)
    {
        try
        {
            return log.apply(entry);
        }
        catch (final RuntimeException e)
        {
            return CompletableFuture.failedFuture(e);
        }
    }

    private static void forward(final CompletableFuture<ByteBuffer> from, final CompletableFuture<ByteBuffer> to)
    {
        from.whenComplete((reply, failure) ->
        {
            if (failure != null)
            {
                to.completeExceptionally(failure);
            }
            else
            {
                to.complete(reply);
            }
        });
    }

    private void failOffered(final Throwable why)
    {
        ShardBatch batch;
        while ((batch = offered.poll()) != null)
        {
            batch.committed().completeExceptionally(why);
        }
    }

    /** Stops sending: batches not handed to the log yet fail, and so does everything handed over later. */
    void close()
    {
        closed = true;
        try
        {
            thread.execute(() ->
            {
                stopped = true;
                for (final ShardBatch batch : waiting)
                {
                    batch.committed().completeExceptionally(refused);
                }
                waiting.clear();
                failOffered(refused);
            });
        }
        catch (final RejectedExecutionException already)
        {
            return;
        }
        thread.shutdown();
    }
}
