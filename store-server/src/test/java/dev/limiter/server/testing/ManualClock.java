package dev.limiter.server.testing;

import dev.limiter.server.engine.MonotonicClock;

import java.util.concurrent.atomic.AtomicLong;

/** A clock tests move by hand: its wall time is its monotonic time plus an offset they set (0 at first). */
public final class ManualClock implements MonotonicClock
{
    private final AtomicLong nanos;
    private volatile long wallOffsetNanos;

    public ManualClock(final long startNanos)
    {
        nanos = new AtomicLong(startNanos);
    }

    @Override
    public long nanoTime()
    {
        return nanos.get();
    }

    @Override
    public long wallNanos()
    {
        return nanos.get() + wallOffsetNanos;
    }

    /** Wall time from now on is the monotonic time plus {@code offsetNanos}. */
    public void wallOffset(final long offsetNanos)
    {
        wallOffsetNanos = offsetNanos;
    }

    public long advance(final long deltaNanos)
    {
        return nanos.addAndGet(deltaNanos);
    }

    public void set(final long value)
    {
        nanos.set(value);
    }
}
