package dev.limiter.cli.pilot;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * Plays a {@link Trace.Schedule} open loop: each request is handed to the sink when it is due,
 * whether or not earlier ones have been answered (a slow limiter or backend does not slow the
 * traffic down, as it would not in production). The sink must not block; the clock is injected so
 * tests pace with a manual one.
 */
public final class TracePlayer
{
    /** The time the player paces by. */
    public interface Pacer
    {
        /** Now, in nanoseconds of an arbitrary origin. */
        long nanoTime();

        /** Returns at or after {@code nanos} (or earlier when interrupted; the player checks again). */
        void parkUntil(long nanos);

        /** {@link System#nanoTime()} and parking. */
        Pacer SYSTEM = new Pacer()
        {
            @Override
            public long nanoTime()
            {
                return System.nanoTime();
            }

            @Override
            public void parkUntil(final long nanos)
            {
                long left;
                while ((left = nanos - System.nanoTime()) > 0)
                {
                    LockSupport.parkNanos(left);
                }
            }
        };
    }

    /** Where each due request goes; it must return at once (answers come back asynchronously). */
    @FunctionalInterface
    public interface Sink
    {
        void send(int tenant, long dueNanos);
    }

    /** What a play did: requests handed over, and how late the latest one was handed over. */
    public record Played(long sent, long maxLateNanos, boolean stopped)
    {
    }

    private final Pacer pacer;

    public TracePlayer(final Pacer pacer)
    {
        this.pacer = pacer;
    }

    /** Plays {@code schedule} from now, until its end or until {@code stop} is set. */
    public Played play(final Trace.Schedule schedule, final Sink sink, final AtomicBoolean stop)
    {
        final long start = pacer.nanoTime();
        long maxLate = 0;
        long sent = 0;
        for (int i = 0; i < schedule.size(); i++)
        {
            final long due = start + schedule.dueNanos()[i];
            while (pacer.nanoTime() < due && !stop.get())
            {
                pacer.parkUntil(due);
            }
            if (stop.get())
            {
                return new Played(sent, maxLate, true);
            }
            maxLate = Math.max(maxLate, pacer.nanoTime() - due);
            sink.send(schedule.tenant()[i], due);
            sent++;
        }
        return new Played(sent, maxLate, false);
    }
}
