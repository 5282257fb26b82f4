package dev.limiter.server.engine;

/** The node's source of monotonic time, injected so tests can drive it by hand. */
@FunctionalInterface
public interface MonotonicClock
{
    /** Monotonic nanoseconds from an arbitrary origin; never goes backwards. */
    long nanoTime();

    /**
     * The UTC wall time in nanoseconds since the epoch (millisecond precision by default), for
     * limits whose windows are aligned to UTC. May jump; decisions never let a key's time go back.
     */
    default long wallNanos()
    {
        return System.currentTimeMillis() * 1_000_000L;
    }

    /** {@link System#nanoTime()}. */
    MonotonicClock SYSTEM = System::nanoTime;
}
