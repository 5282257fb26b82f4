package dev.limiter.bench.gateway;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * An open-loop schedule: request {@code i} is due at {@code start + i x 1e9 / rate} ns, whatever became
 * of the requests before it, so latency measured from the due time charges a stall to every request it
 * delayed (no coordinated omission). The same scheme as {@code ./limiter bench --rate} (its pacer is
 * private to that tool, and tied to the SDK client): park until a margin before the next request is
 * due, then spin, because a park wakes up to the kernel's timer slack late.
 */
final class Pacer
{
    static final long MIN_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(60);
    static final long MAX_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(500);

    private final long start;
    private final double nanosPerRequest;
    private final long spinNanos;
    private long issued;

    /**
     * @param perSecond requests per second, at least 1
     * @param start the first request's due time, a {@link System#nanoTime()} value
     */
    Pacer(final long perSecond, final long start)
    {
        if (perSecond < 1)
        {
            throw new IllegalArgumentException("rate must be at least 1 request per second, was " + perSecond);
        }
        this.start = start;
        this.nanosPerRequest = 1e9 / perSecond;
        this.spinNanos = spinNanos(perSecond);
    }

    /** When request {@code index} (from 0) is due. */
    long dueNanos(final long index)
    {
        return start + (long)(index * nanosPerRequest);
    }

    /**
     * How long before each request is due the pacer stops parking and spins: 5% of the interval, at
     * least {@link #MIN_SPIN_NANOS} and at most {@link #MAX_SPIN_NANOS} (as {@code ./limiter bench}).
     */
    static long spinNanos(final long perSecond)
    {
        return Math.max(MIN_SPIN_NANOS, Math.min(MAX_SPIN_NANOS, 1_000_000_000L / 20 / Math.max(1, perSecond)));
    }

    /** Waits until the next request is due (at once when it is late) and returns its due time. */
    long awaitNext()
    {
        final long due = dueNanos(issued++);
        long early;
        while ((early = due - System.nanoTime()) > 0)
        {
            if (early > spinNanos)
            {
                LockSupport.parkNanos(early - spinNanos);
            }
            else
            {
                Thread.onSpinWait();
            }
        }
        return due;
    }
}
