package dev.limiter.client;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;

/**
 * A caller's thread waiting for its call's decision. The SDK's deadline timer ends the call: at
 * its deadline, or a little later after a pause of this process (answers that arrived meanwhile
 * are read first). The caller ends the call itself only when the timer has stopped going round,
 * which it should never do: it did not turn through two {@value #TIMER_STUCK_MILLIS} ms waits of
 * this thread, each about as long as asked (a pause of the whole process is not taken for it).
 */
final class BlockingWait
{
    /**
     * How long past its deadline a blocking call waits for the deadline timer before it looks whether the timer is
     * stuck, ms.
     */
    static final long SLACK_MILLIS = 10;
    static final long TIMER_STUCK_MILLIS = 20;
    private static final long SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(SLACK_MILLIS);
    private static final long TIMER_STUCK_NANOS = TimeUnit.MILLISECONDS.toNanos(TIMER_STUCK_MILLIS);

    private final DeadlineTimer deadlines;
    private final LongAdder lateDeadlines = new LongAdder();

    BlockingWait(final DeadlineTimer deadlines)
    {
        this.deadlines = deadlines;
    }

    /**
     * The decision of {@code future} (a call made with its blocking flag set, or a decision made here).
     *
     * @throws LimiterException when the call failed, or the thread was interrupted
     */
    Decision await(final CompletableFuture<Decision> future)
    {
        if (future instanceof Delivery.Decided decided)
        {
            return decided.decision; // the SDK decided already; only its delivery to async callers waits
        }
        final PendingCall call = (PendingCall)future;
        try
        {
            long wait = Math.max(0, call.deadlineNanos - System.nanoTime()) + SLACK_NANOS;
            long timerTurnSeen = 0;
            long lookedAt = 0;
            int stillLooks = 0;
            while (true)
            {
                try
                {
                    return future.get(wait, TimeUnit.NANOSECONDS);
                }
                catch (final TimeoutException late)
                {
                    final long now = System.nanoTime();
                    final long lastTurn = deadlines.lastTurnNanos();
                    // A wait that overran (a pause) is no evidence that the timer is stuck.
                    final boolean still = now - lastTurn >= TIMER_STUCK_NANOS && lastTurn == timerTurnSeen &&
                        now - lookedAt < 2 * TIMER_STUCK_NANOS;
                    stillLooks = still ? stillLooks + 1 : 0;
                    timerTurnSeen = lastTurn;
                    lookedAt = now;
                    if (stillLooks < 2)
                    {
                        wait = TIMER_STUCK_NANOS; // the timer is alive (or may be): it will end the call
                        continue;
                    }
                }
                lateDeadlines.increment();
                call.lateHere = true; // this side was late (its timer did not run): not the store's failure
                call.completeExceptionally(new LimiterTimeoutException(
                    "no answer within the call's deadline (the SDK's deadline timer was late)"));
                return future.get();
            }
        }
        catch (final ExecutionException e)
        {
            if (e.getCause() instanceof LimiterException failure)
            {
                throw failure;
            }
            throw new LimiterException("acquire failed: " + e.getCause(), e.getCause());
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new LimiterException("interrupted while waiting for a decision", e);
        }
    }

    /** Calls that the caller's thread ended because the deadline timer had not (see the class comment). */
    long lateDeadlines()
    {
        return lateDeadlines.sum();
    }
}
