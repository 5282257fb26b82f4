package dev.limiter.client;

import io.netty.util.concurrent.DefaultThreadFactory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * Hands out what the SDK decides itself (local decisions, deadline expiries, failures to reach any
 * node) on a thread of its own. Callers chain their next call from a callback: completed on their
 * own stack it would recurse, and completed on an I/O thread it would hold up the nodes' answers.
 * A blocking caller reads a {@link Decided} future's decision at once instead of waiting for it.
 */
final class Delivery implements AutoCloseable
{
    /** A decision the SDK made itself: async callers get it on the delivery thread, blocking ones at once. */
    static final class Decided extends CompletableFuture<Decision>
    {
        final Decision decision;

        Decided(final Decision decision)
        {
            this.decision = decision;
        }
    }

    private final ExecutorService thread;

    Delivery(final String threadName)
    {
        this.thread = Executors.newSingleThreadExecutor(new DefaultThreadFactory(threadName, true));
    }

    /** {@code decision} as a future completed on the delivery thread (at once when the client is closing). */
    CompletableFuture<Decision> later(final Decision decision)
    {
        final Decided result = new Decided(decision);
        try
        {
            thread.execute(() -> result.complete(decision));
        }
        catch (final RejectedExecutionException closing)
        {
            result.complete(decision);
        }
        return result;
    }

    /** Fails {@code call} on the delivery thread (its fallback may decide it locally there). */
    void fail(final PendingCall call, final LimiterException failure)
    {
        try
        {
            thread.execute(() -> call.completeExceptionally(failure));
        }
        catch (final RejectedExecutionException closing)
        {
            call.completeExceptionally(failure);
        }
    }

    /** Runs {@code task} on the delivery thread; dropped when the client is closed. */
    void run(final Runnable task)
    {
        try
        {
            thread.execute(task);
        }
        catch (final RejectedExecutionException closing)
        {
            // closed meanwhile: nothing will be decided any more
        }
    }

    Executor executor()
    {
        return thread;
    }

    @Override
    public void close()
    {
        thread.shutdown();
    }
}
