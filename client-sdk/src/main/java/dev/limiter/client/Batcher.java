package dev.limiter.client;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.util.internal.PlatformDependent;

import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * Gathers the calls made on any thread for one connection and writes them as few BATCH_ACQUIRE
 * frames as it can (an ACQUIRE for a lone call): calls made while the event loop is busy share a
 * frame and a syscall. A frame holds at most {@link ConnectionSettings#maxBatch()} calls and
 * {@link ConnectionSettings#maxFrameBytes()} bytes. Every frame is tracked in the in-flight table
 * by its earliest deadline.
 */
final class Batcher
{
    private final EventLoop loop;
    private final Link link;
    private final InFlightTable inFlight;
    private final int maxBatch;
    private final int maxFrameBytes;
    /** Why a call cannot be sent now (the link is down). */
    private final Supplier<LimiterUnavailableException> unavailable;
    private final Queue<PendingCall> queue = PlatformDependent.newMpscQueue();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Runnable drain = this::drain;

    Batcher(final EventLoop loop, final Link link, final InFlightTable inFlight, final ConnectionSettings settings,
        final Supplier<LimiterUnavailableException> unavailable)
    {
        this.loop = loop;
        this.link = link;
        this.inFlight = inFlight;
        this.maxBatch = settings.maxBatch();
        this.maxFrameBytes = settings.maxFrameBytes();
        this.unavailable = unavailable;
    }

    /** Queues a call (any thread); the event loop writes it with whatever else is queued then. */
    void submit(final PendingCall call)
    {
        queue.offer(call);
        if (drainScheduled.compareAndSet(false, true))
        {
            try
            {
                loop.execute(drain);
            }
            catch (final RejectedExecutionException e)
            {
                // The client is closing: fail what is queued instead of throwing at the caller.
                drainScheduled.set(false);
                failQueued(new LimiterUnavailableException("limiter client closed"));
            }
        }
    }

    /** Writes what is queued now (event loop): after a reconnect, calls queued meanwhile. */
    void drainIfQueued()
    {
        if (!queue.isEmpty())
        {
            drain();
        }
    }

    void failQueued(final Throwable cause)
    {
        PendingCall call;
        while ((call = queue.poll()) != null)
        {
            call.completeExceptionally(cause);
        }
    }

    private void drain()
    {
        drainScheduled.set(false);
        final Channel ch = link.channel();
        if (ch == null || !ch.isActive())
        {
            failQueued(unavailable.get());
            return;
        }
        PendingCall call = queue.poll();
        boolean wrote = false;
        while (call != null)
        {
            final PendingCall[] batch = new PendingCall[Math.min(maxBatch, queue.size() + 1)];
            int count = 0;
            final ByteBuf buf = ch.alloc().directBuffer(64 + batch.length * 48);
            final long correlationId = inFlight.newCorrelationId();
            final int frameStart = AcquireCodec.beginBatch(buf, MessageType.BATCH_ACQUIRE, correlationId);
            long earliestDeadline = 0;
            while (call != null && count < batch.length)
            {
                if (count > 0 && buf.writerIndex() - frameStart + 4 + call.descriptor.encoded().length > maxFrameBytes)
                {
                    break; // this call starts the next frame: the node would refuse a larger one
                }
                // A call past its deadline but not yet ended is still sent: the deadline timer ends
                // it, and after a pause of this process it waits a little for the answer.
                if (!call.isDone())
                {
                    AcquireCodec.appendEntry(buf, call.wireCost, call.descriptor.encoded());
                    batch[count++] = call;
                    if (count == 1 || call.deadlineNanos - earliestDeadline < 0)
                    {
                        earliestDeadline = call.deadlineNanos; // compared as differences: nanoTime may wrap
                    }
                }
                call = queue.poll();
            }
            if (count == 0)
            {
                buf.release();
                continue;
            }
            AcquireCodec.finishBatch(buf, frameStart, count);
            if (count == 1)
            {
                buf.setByte(frameStart + Frame.TYPE_OFFSET, MessageType.ACQUIRE);
            }
            inFlight.track(correlationId, count == batch.length ? batch : Arrays.copyOf(batch, count),
                earliestDeadline);
            link.write(ch, buf);
            wrote = true;
        }
        if (wrote)
        {
            ch.flush();
        }
    }
}
