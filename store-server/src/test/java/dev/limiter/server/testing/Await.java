package dev.limiter.server.testing;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waits for a condition instead of sleeping for a guessed time: polls with a short backoff (1 ms,
 * doubling to 50 ms) and fails with what was awaited, how long, and (when given) the state that
 * explains why it did not happen. A test that must wait out a deadline on purpose still sleeps.
 */
public final class Await
{
    private static final long FIRST_PAUSE_MILLIS = 1;
    private static final long MAX_PAUSE_MILLIS = 50;

    private Await()
    {
    }

    /**
     * Returns once {@code condition} holds.
     *
     * @param what      what is awaited, for the failure message ("a leader for group 2")
     * @param timeout   how long to wait at most
     * @param condition checked at once, then after each pause; must not block for long
     * @throws AssertionError when the timeout passes first
     */
    public static void until(final String what, final Duration timeout, final BooleanSupplier condition)
    {
        until(() -> what, timeout, condition, null);
    }

    /**
     * As {@link #until(String, Duration, BooleanSupplier)}, and on failure the message also holds
     * what {@code state} says then (for example each node's role and applied index).
     */
    public static void until(final String what, final Duration timeout, final BooleanSupplier condition,
        final Supplier<String> state)
    {
        until(() -> what, timeout, condition, state);
    }

    /** As {@link #until(String, Duration, BooleanSupplier)}, with a description computed only when the wait fails. */
    public static void until(final Supplier<String> what, final Duration timeout, final BooleanSupplier condition)
    {
        until(what, timeout, condition, null);
    }

    /** As above, with a description computed only when the wait fails. */
    public static void until(final Supplier<String> what, final Duration timeout, final BooleanSupplier condition,
        final Supplier<String> state)
    {
        final long start = System.nanoTime();
        final long deadline = start + timeout.toNanos();
        long pause = FIRST_PAUSE_MILLIS;
        while (!condition.getAsBoolean())
        {
            final long now = System.nanoTime();
            if (now - deadline >= 0)
            {
                final StringBuilder message = new StringBuilder("timed out after ")
                    .append(TimeUnit.NANOSECONDS.toMillis(now - start)).append(" ms waiting for ").append(what.get());
                if (state != null)
                {
                    message.append("; state: ").append(state.get());
                }
                throw new AssertionError(message.toString());
            }
            pause(Math.max(1, Math.min(pause, TimeUnit.NANOSECONDS.toMillis(deadline - now))));
            pause = Math.min(pause * 2, MAX_PAUSE_MILLIS);
        }
    }

    private static void pause(final long millis)
    {
        try
        {
            Thread.sleep(millis);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting", e);
        }
    }
}
