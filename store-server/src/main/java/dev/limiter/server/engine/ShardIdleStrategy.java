package dev.limiter.server.engine;

import org.agrona.concurrent.IdleStrategy;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * How a shard's dedicated thread waits for frames: spins a little (a frame usually follows the
 * last), then parks for at most a millisecond, telling {@link #wake} it is parked so that the
 * event loop handing it a frame can unpark it at once instead of waiting out the park. It says so
 * before its last look at the queue: a frame offered after that look finds it parked and wakes it,
 * one offered before it is seen (else a frame offered between the empty poll and the park would wait
 * out the whole park).
 */
final class ShardIdleStrategy implements IdleStrategy
{
    static final int SPINS_BEFORE_PARK = 200;
    static final long MAX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final BooleanSupplier workWaiting;
    private volatile Thread parked;
    private int idle;
    /** Parks taken (owner thread only; for tests). */
    private long parks;

    /** @param workWaiting whether a frame is queued for the shard (any thread may offer one meanwhile) */
    ShardIdleStrategy(final BooleanSupplier workWaiting)
    {
        this.workWaiting = workWaiting;
    }

    @Override
    public void idle(final int workCount)
    {
        if (workCount > 0)
        {
            reset();
        }
        else
        {
            idle();
        }
    }

    @Override
    public void idle()
    {
        if (idle < SPINS_BEFORE_PARK - 1)
        {
            idle++; // capped: an int counting every idle turn would wrap after weeks and spin for days
            Thread.onSpinWait();
            return;
        }
        parked = Thread.currentThread();
        if (!workWaiting.getAsBoolean())
        {
            parks++;
            LockSupport.parkNanos(this, MAX_PARK_NANOS);
        }
        parked = null;
    }

    @Override
    public void reset()
    {
        idle = 0;
    }

    /** Unparks the shard's thread if it is parked (any thread). */
    void wake()
    {
        final Thread thread = parked;
        if (thread != null)
        {
            LockSupport.unpark(thread);
        }
    }

    /** The thread that said it parks, or null (for tests). */
    Thread parkedThread()
    {
        return parked;
    }

    /** Parks taken so far (owner thread; for tests). */
    long parks()
    {
        return parks;
    }

    @Override
    public String alias()
    {
        return "spin-then-park";
    }
}
