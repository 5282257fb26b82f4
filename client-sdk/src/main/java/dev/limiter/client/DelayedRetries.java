package dev.limiter.client;

import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Work waiting out a {@link Backoff} before it is sent again: scheduled on an I/O thread, where it is
 * on no connection and in no queue. A loop shut down drops its scheduled tasks unrun, so
 * {@link #close()} fails what still waits, and work put here after the client closed fails at once.
 * Each piece of work is retried or failed exactly once.
 *
 * @param <T> the work: a call or a release, completed by whoever ends it
 */
final class DelayedRetries<T extends CompletableFuture<?>>
{
    private final Set<T> waiting = ConcurrentHashMap.newKeySet();
    private final BooleanSupplier closed;

    /** @param closed whether the client is closed */
    DelayedRetries(final BooleanSupplier closed)
    {
        this.closed = closed;
    }

    /**
     * Hands {@code work} to {@code retry} on {@code loop} after {@code delayNanos}, unless the client
     * closes first: the work then fails as the client's closing.
     */
    void later(final ScheduledExecutorService loop, final T work, final long delayNanos, final Consumer<T> retry)
    {
        waiting.add(work);
        try
        {
            loop.schedule(() ->
            {
                if (waiting.remove(work))
                {
                    retry.accept(work);
                }
            }, delayNanos, TimeUnit.NANOSECONDS);
        }
        catch (final RejectedExecutionException closing)
        {
            failIfWaiting(work);
        }
        if (closed.getAsBoolean())
        {
            failIfWaiting(work); // close() ran meanwhile
        }
    }

    /** How many wait now (any thread). */
    int size()
    {
        return waiting.size();
    }

    /** Fails everything still waiting: the client is closed. */
    void close()
    {
        for (final T work : waiting)
        {
            failIfWaiting(work);
        }
    }

    private void failIfWaiting(final T work)
    {
        if (waiting.remove(work))
        {
            work.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
        }
    }
}
