package dev.limiter.client;

import io.netty.channel.EventLoop;
import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.concurrent.ScheduledFuture;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The frames one connection has sent and not yet had answered, by correlation id. A frame is
 * dropped when its answer is read, or once every call in it is settled: the SDK's deadline timer
 * ends calls at their deadlines, and one sweep per connection (not a timer per frame) looks at
 * frames past their earliest deadline. Event loop only.
 */
final class InFlightTable
{
    /** How often a frame past its earliest deadline looks whether its calls are settled yet. */
    private static final long SETTLE_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    /** A frame on the wire: the calls it carries in entry order, or a request's future. */
    static final class Entry
    {
        final long correlationId;
        final PendingCall[] calls;
        /** The answer of a request that carries no calls (PING, RELEASE, DEGRADED_REPORT); null for acquires. */
        final CompletableFuture<Void> request;
        /** When the sweep looks at this frame next (its earliest deadline, then every settle check). */
        long dueNanos;

        Entry(final long correlationId, final PendingCall[] calls, final CompletableFuture<Void> request)
        {
            this.correlationId = correlationId;
            this.calls = calls;
            this.request = request;
        }

        void fail(final Throwable cause)
        {
            for (final PendingCall call : calls)
            {
                call.completeExceptionally(cause);
            }
            if (request != null)
            {
                request.completeExceptionally(cause);
            }
        }

        /** At {@link #dueNanos}: fails a request past its deadline, and tells whether every call is settled. */
        private boolean settledWhenDue(final String peer)
        {
            if (request != null && !request.isDone())
            {
                request.completeExceptionally(new LimiterTimeoutException("no answer from " + peer
                    + " within the deadline"));
            }
            for (final PendingCall call : calls)
            {
                if (!call.isDone())
                {
                    return false;
                }
            }
            return true;
        }
    }

    private static final PendingCall[] NO_CALLS = new PendingCall[0];

    private final EventLoop loop;
    private final String peer;
    private final LongObjectHashMap<Entry> entries = new LongObjectHashMap<>();
    private final Runnable sweepTask = this::sweep;
    private long nextCorrelationId = 1;
    /** Null when no sweep is scheduled. */
    private ScheduledFuture<?> sweep;
    private long sweepAtNanos;

    InFlightTable(final EventLoop loop, final String peer)
    {
        this.loop = loop;
        this.peer = peer;
    }

    /** The id of the next frame this connection sends. */
    long newCorrelationId()
    {
        return nextCorrelationId++;
    }

    /**
     * Holds frame {@code correlationId} of {@code calls} until its answer, and has the sweep look at it by {@code
     * dueNanos}.
     */
    void track(final long correlationId, final PendingCall[] calls, final long dueNanos)
    {
        track(new Entry(correlationId, calls, null), dueNanos);
    }

    /** Holds request {@code correlationId}, answered by {@code answer}, until its answer or {@code deadlineNanos}. */
    void track(final long correlationId, final CompletableFuture<Void> answer, final long deadlineNanos)
    {
        track(new Entry(correlationId, NO_CALLS, answer), deadlineNanos);
    }

    private void track(final Entry entry, final long dueNanos)
    {
        entry.dueNanos = dueNanos;
        entries.put(entry.correlationId, entry);
        if (sweep == null || dueNanos - sweepAtNanos < 0)
        {
            scheduleSweep(dueNanos, System.nanoTime());
        }
    }

    /**
     * The frame answered by {@code correlationId}, no longer held; null when none is (answered after it was dropped).
     */
    Entry remove(final long correlationId)
    {
        return entries.remove(correlationId);
    }

    int size()
    {
        return entries.size();
    }

    /** Fails every frame held (the connection was lost or closed). */
    void failAll(final Throwable cause)
    {
        final List<Entry> all = new ArrayList<>(entries.values());
        entries.clear();
        all.forEach(e -> e.fail(cause));
    }

    private void scheduleSweep(final long atNanos, final long nowNanos)
    {
        if (sweep != null)
        {
            sweep.cancel(false);
        }
        sweepAtNanos = atNanos;
        sweep = loop.schedule(sweepTask, Math.max(0, atNanos - nowNanos), TimeUnit.NANOSECONDS);
    }

    /** Drops the frames due by now whose calls are all settled; runs again when the next frame is due. */
    private void sweep()
    {
        sweep = null;
        final long now = System.nanoTime();
        List<Entry> settled = null;
        long next = 0;
        boolean pending = false;
        for (final Entry entry : entries.values())
        {
            if (entry.dueNanos - now <= 0)
            {
                if (entry.settledWhenDue(peer))
                {
                    if (settled == null)
                    {
                        settled = new ArrayList<>();
                    }
                    settled.add(entry);
                    continue;
                }
                entry.dueNanos = now + SETTLE_CHECK_NANOS;
            }
            if (!pending || entry.dueNanos - next < 0)
            {
                next = entry.dueNanos;
                pending = true;
            }
        }
        if (settled != null)
        {
            for (final Entry entry : settled)
            {
                entries.remove(entry.correlationId);
            }
        }
        if (pending)
        {
            scheduleSweep(next, now);
        }
    }
}
