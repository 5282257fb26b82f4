package dev.limiter.client;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The SDK tests' wait for a condition, instead of a sleep for a guessed time: checks it at once, then
 * every {@value #POLL_MILLIS} ms, and fails naming what was awaited once {@code timeout} has passed.
 * (The SDK cannot see store-server's {@code testing.Await}: this is the same idea, kept small.)
 * A test that must let time pass on purpose, to show that something does not happen, sleeps in
 * {@link #quietFor} instead, which says so.
 */
final class Await
{
    private static final long POLL_MILLIS = 2;

    private Await()
    {
    }

    /** Returns once {@code condition} holds; an AssertionError naming {@code what} after {@code timeout}. */
    static void until(final String what, final Duration timeout, final BooleanSupplier condition)
    {
        final long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() - deadline >= 0)
            {
                throw new AssertionError("not within " + timeout.toMillis() + " ms: " + what);
            }
            sleep(POLL_MILLIS);
        }
    }

    /**
     * Lets {@code millis} pass with nothing to wait for: the test then checks that something did not
     * change meanwhile (a count that must stay, a report that must not come).
     */
    static void quietFor(final long millis)
    {
        sleep(millis);
    }

    private static void sleep(final long millis)
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
