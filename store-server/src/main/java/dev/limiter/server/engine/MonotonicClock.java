package dev.limiter.server.engine;

/** The node's source of monotonic time, injected so tests can drive it by hand. */
@FunctionalInterface
public interface MonotonicClock
{
    /** Monotonic nanoseconds from an arbitrary origin; never goes backwards. */
    long nanoTime();

    /** {@link System#nanoTime()}. */
    MonotonicClock SYSTEM = System::nanoTime;
}
