package dev.limiter.server;

import dev.limiter.server.engine.MonotonicClock;

import java.util.concurrent.atomic.AtomicLong;

/** A clock tests move by hand. */
public final class ManualClock implements MonotonicClock
{
    private final AtomicLong nanos;

    public ManualClock(final long startNanos)
    {
        nanos = new AtomicLong(startNanos);
    }

    @Override
    public long nanoTime()
    {
        return nanos.get();
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
