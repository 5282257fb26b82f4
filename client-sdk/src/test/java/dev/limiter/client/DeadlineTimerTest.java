package dev.limiter.client;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The deadline timer ends calls at their deadline, and sleeps while it has none to end. */
@Timeout(30)
class DeadlineTimerTest
{
    @Test
    void anIdleTimerSleepsInsteadOfTickingAndACallRegisteredThenStillEndsAtItsDeadline() throws Exception
    {
        final CompletableFuture<Long> expiredAt = new CompletableFuture<>();
        try (DeadlineTimer timer = new DeadlineTimer("test-deadlines", call -> expiredAt.complete(System.nanoTime()), Runnable::run))
        {
            // Nothing registered: after 100 ms the thread goes round no more (it used to every millisecond).
            Await.quietFor(250);
            final long turn = timer.lastTurnNanos();
            Await.quietFor(300);
            assertEquals(turn, timer.lastTurnNanos(), "no turn while idle");

            final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(30);
            final PendingCall call = new PendingCall(Descriptor.of("t", "/x"), 1, deadline);
            call.blocking = true;
            timer.add(call);
            final long lateMillis = (expiredAt.get(5, TimeUnit.SECONDS) - deadline) / 1_000_000;
            assertTrue(lateMillis >= 0 && lateMillis < 15, "ended " + lateMillis + " ms after its deadline");
            assertEquals(0, timer.pauses(), "waking from an idle sleep is no pause of the process");
        }
    }

    @Test
    void anAnsweredCallIsLetGoWithinAFewTicksEvenWithALongDeadline() throws Exception
    {
        // A call with a 1 s deadline (the load generator's), in the wheel unanswered, then answered:
        // the wheel lets it go (and its result with it) at its next look, RECHECK_TICKS later, not at
        // its deadline. Held to their deadlines, a busy caller's answered calls filled its young
        // generation.
        try (DeadlineTimer timer = new DeadlineTimer("test-deadlines", call -> { }, Runnable::run))
        {
            PendingCall call = new PendingCall(Descriptor.of("t", "/x"), 1, System.nanoTime() + TimeUnit.SECONDS.toNanos(1));
            timer.add(call);
            // Drained into the wheel while unanswered: a turn that began after the add has ended.
            final long turnsAfterAdd = timer.turns();
            Await.until("a turn that drained the call", Duration.ofSeconds(2),
                () -> timer.turns() >= turnsAfterAdd + 2);
            call.complete(new Decision(true, dev.limiter.protocol.ReasonCode.ALLOWED, 1, 2, 0, 0, "p", 1, 1));
            // A later call from this thread takes the queue's stub place (the last call registered stays linked there).
            timer.add(new PendingCall(Descriptor.of("t", "/x"), 1, System.nanoTime() + TimeUnit.SECONDS.toNanos(1)));
            final java.lang.ref.WeakReference<PendingCall> answered = new java.lang.ref.WeakReference<>(call);
            call = null;
            Await.until("the answered call let go within 500 ms, its deadline 1 s away", Duration.ofMillis(500), () ->
            {
                System.gc();
                return answered.get() == null;
            });
        }
    }

    @Test
    void manyCallsRegisteredFromManyThreadsWhileItSleepsAllEnd() throws Exception
    {
        final java.util.concurrent.atomic.AtomicInteger ended = new java.util.concurrent.atomic.AtomicInteger();
        try (DeadlineTimer timer = new DeadlineTimer("test-deadlines", call -> ended.incrementAndGet(), Runnable::run))
        {
            for (int round = 0; round < 20; round++)
            {
                // Asleep before every other round (after 100 ms without a call): time passes on purpose.
                Await.quietFor(round % 2 == 0 ? 130 : 5);
                final Thread[] threads = new Thread[4];
                for (int t = 0; t < threads.length; t++)
                {
                    threads[t] = new Thread(() ->
                    {
                        for (int i = 0; i < 50; i++)
                        {
                            final PendingCall call = new PendingCall(Descriptor.of("t", "/x"), 1,
                                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(5));
                            call.blocking = true;
                            timer.add(call);
                        }
                    });
                    threads[t].start();
                }
                for (final Thread thread : threads)
                {
                    thread.join();
                }
            }
            Await.until("every call ended", Duration.ofSeconds(5), () -> ended.get() >= 20 * 4 * 50);
            assertEquals(20 * 4 * 50, ended.get(), "no registration was missed by a sleeping timer");
        }
    }

    @Test
    void underSteadyTrafficItWakesForTheWheelNotEveryMillisecond() throws Exception
    {
        // 200 calls a second with the default 20 ms deadline, each answered at once (as a node does):
        // it used to go round every millisecond while calls came in; now only when a slot comes due,
        // at most every RECHECK_TICKS, and no registration wakes it.
        try (DeadlineTimer timer = new DeadlineTimer("test-deadlines", call -> { }, Runnable::run))
        {
            final long before = timer.turns();
            final long start = System.nanoTime();
            for (int i = 0; i < 200; i++)
            {
                final PendingCall call = new PendingCall(Descriptor.of("t", "/x"), 1, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20));
                timer.add(call);
                call.complete(new Decision(true, dev.limiter.protocol.ReasonCode.ALLOWED, 1, 2, 0, 0, "p", 1, 1));
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
            final long millis = (System.nanoTime() - start) / 1_000_000;
            final long turns = timer.turns() - before;
            // About millis / 16 turns; ticking took about one per millisecond.
            assertTrue(turns * 4 < millis, turns + " turns in " + millis + " ms");
        }
    }

    @Test
    void aCallDueBeforeThePlannedWakeUpWakesTheTimerAndEndsAtItsDeadline() throws Exception
    {
        final CompletableFuture<Long> expiredAt = new CompletableFuture<>();
        try (DeadlineTimer timer = new DeadlineTimer("test-deadlines", call -> expiredAt.complete(System.nanoTime()), Runnable::run))
        {
            // A call with a long deadline in the wheel: once it has gone round and put it there, the
            // timer sleeps RECHECK_TICKS (16 ms).
            final long turnsBefore = timer.turns();
            timer.add(new PendingCall(Descriptor.of("t", "/long"), 1, System.nanoTime() + TimeUnit.SECONDS.toNanos(5)));
            Await.until("a turn that put it in the wheel", Duration.ofSeconds(2), () -> timer.turns() != turnsBefore);
            Await.quietFor(3); // into the timer's 16 ms sleep
            final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2);
            final PendingCall call = new PendingCall(Descriptor.of("t", "/x"), 1, deadline);
            call.blocking = true;
            timer.add(call);
            final long lateMillis = (expiredAt.get(5, TimeUnit.SECONDS) - deadline) / 1_000_000;
            // Without the wake-up it ends at the planned one, about 11 ms late; the bound adds what a
            // 1 ms park oversleeps on this machine meanwhile.
            long oversleptMillis = 0;
            for (int i = 0; i < 5; i++)
            {
                final long start = System.nanoTime();
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                oversleptMillis = Math.max(oversleptMillis, (System.nanoTime() - start) / 1_000_000 - 1);
            }
            assertTrue(lateMillis >= 0 && lateMillis < 5 + oversleptMillis,
                "ended " + lateMillis + " ms after its 2 ms deadline (a 1 ms park overslept up to " + oversleptMillis + " ms)");
            assertEquals(0, timer.pauses(), "an early wake-up asked for is no pause");
        }
    }
}
