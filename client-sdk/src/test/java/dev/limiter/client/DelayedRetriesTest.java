package dev.limiter.client;

import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.DefaultEventLoop;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Work waiting out a backoff: retried once when its time comes, or failed once when the client closes first. */
class DelayedRetriesTest
{
    private final EmbeddedChannel loopOwner = new EmbeddedChannel();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final DelayedRetries<CompletableFuture<Void>> retries = new DelayedRetries<>(closed::get);
    private final List<CompletableFuture<Void>> retried = new ArrayList<>();

    @AfterEach
    void finish()
    {
        loopOwner.finishAndReleaseAll();
    }

    private CompletableFuture<Void> waitFor(final long millis)
    {
        final CompletableFuture<Void> work = new CompletableFuture<>();
        retries.later(loopOwner.eventLoop(), work, TimeUnit.MILLISECONDS.toNanos(millis), retried::add);
        return work;
    }

    @Test
    void workIsRetriedOnceWhenItsDelayHasPassed()
    {
        loopOwner.freezeTime();
        final CompletableFuture<Void> work = waitFor(10);
        loopOwner.advanceTimeBy(9, TimeUnit.MILLISECONDS);
        loopOwner.runScheduledPendingTasks();
        assertTrue(retried.isEmpty(), "not before its delay");
        assertEquals(1, retries.size());
        loopOwner.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        loopOwner.runScheduledPendingTasks();
        assertEquals(List.of(work), retried);
        assertEquals(0, retries.size());
        assertFalse(work.isDone(), "the retry completes it, not the waiting");
    }

    @Test
    void closingFailsWhatWaitsAndItsRetryNeverRuns()
    {
        loopOwner.freezeTime();
        final CompletableFuture<Void> work = waitFor(10);
        closed.set(true);
        retries.close();
        assertClosedFailure(work);
        loopOwner.advanceTimeBy(10, TimeUnit.MILLISECONDS);
        loopOwner.runScheduledPendingTasks();
        assertTrue(retried.isEmpty(), "failed work is not retried as well");
    }

    @Test
    void workPutAfterTheClientClosedFailsAtOnce()
    {
        closed.set(true);
        assertClosedFailure(waitFor(10));
        assertEquals(0, retries.size());
    }

    @Test
    void aLoopThatNoLongerTakesTasksFailsTheWork() throws Exception
    {
        final DefaultEventLoop stopped = new DefaultEventLoop();
        stopped.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).sync();
        final CompletableFuture<Void> work = new CompletableFuture<>();
        retries.later(stopped, work, 1, retried::add);
        assertClosedFailure(work);
        assertTrue(retried.isEmpty());
    }

    private static void assertClosedFailure(final CompletableFuture<Void> work)
    {
        final ExecutionException failure = assertThrows(ExecutionException.class, () -> work.get(0, TimeUnit.SECONDS));
        assertInstanceOf(LimiterUnavailableException.class, failure.getCause());
        assertEquals("limiter client closed", failure.getCause().getMessage());
    }
}
