package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.server.engine.MonotonicClock;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.DelayingProxy;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A store that answers, but late: a real node behind a proxy that holds its answers back. */
@Timeout(60)
class SlowStoreTest
{
    private static final long DEADLINE_MILLIS = 50;
    /** What a call may take past its deadline: scheduling on a shared 2-core machine, not waiting on the store. */
    private static final long MARGIN_MILLIS = 100;

    @TempDir
    Path dir;

    @Test
    void callsFinishWithinTheirDeadlineWhileTheStoreIsSlowAndOnlyProbesWaitOnIt() throws Exception
    {
        try (StoreServer server = TestNode.start(dir, MonotonicClock.SYSTEM, 1);
             DelayingProxy proxy = new DelayingProxy(server.port());
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + proxy.port()).connections(1)
                 .deadline(Duration.ofMillis(DEADLINE_MILLIS)).circuit(3, Duration.ofMillis(200)).build())
        {
            Await.until("the client to hold the policy set", Duration.ofSeconds(5),
                () -> client.policies().version() > 0);
            assertTrue(client.policies().version() > 0, "the client holds the policy set");

            // A first decision with time to spare: the node's cold path (class loading, JIT) is not what is measured.
            assertFalse(client.acquire(Descriptor.of("steady", "/hot"), 1, Duration.ofSeconds(5)).get().degraded());

            // Slow but within the deadline: the store still decides, the caller waits for it.
            proxy.delayAnswers(10);
            for (int i = 0; i < 10; i++)
            {
                final long start = System.nanoTime();
                final Decision d = client.acquireBlocking(Descriptor.of("steady", "/hot"), 1);
                final long tookMillis = (System.nanoTime() - start) / 1_000_000;
                assertFalse(d.degraded(), "answered in 10 ms of a 50 ms deadline: " + d);
                assertTrue(tookMillis >= 10, "the answer really was held back: " + tookMillis + " ms");
            }

            // Slower than the deadline: every call is decided locally within it; only the calls that
            // open the circuit and one probe at a time wait on the store.
            proxy.delayAnswers(300);
            final long framesBefore = proxy.acquireFramesSent();
            final int threads = 4;
            final long loadNanos = 2_000_000_000L;
            final AtomicLong slowestNanos = new AtomicLong();
            final LongAdder waited = new LongAdder();
            final LongAdder calls = new LongAdder();
            final LongAdder fromTheStore = new LongAdder();
            final List<Thread> load = new ArrayList<>();
            for (int t = 0; t < threads; t++)
            {
                final Descriptor key = Descriptor.of("tenant-" + t, "/hot");
                final Thread thread = new Thread(() ->
                {
                    final long end = System.nanoTime() + loadNanos;
                    while (System.nanoTime() < end)
                    {
                        final long start = System.nanoTime();
                        final Decision d = client.acquireBlocking(key, 1);
                        final long took = System.nanoTime() - start;
                        slowestNanos.accumulateAndGet(took, Math::max);
                        calls.increment();
                        waited.add(took >= (DEADLINE_MILLIS - 10) * 1_000_000 ? 1 : 0);
                        fromTheStore.add(d.degraded() ? 0 : 1);
                        try
                        {
                            // the pace of each caller's calls
                            Thread.sleep(1);
                        }
                        catch (final InterruptedException e)
                        {
                            return;
                        }
                    }
                }, "load-" + t);
                thread.start();
                load.add(thread);
            }
            for (final Thread thread : load)
            {
                thread.join();
            }
            final long tried = proxy.acquireFramesSent() - framesBefore;
            final long slowestMillis = slowestNanos.get() / 1_000_000;
            System.out.printf("slow store: %d calls, %d tried the store, %d waited 40 ms or more, slowest %d ms%n", calls.sum(), tried,
                waited.sum(), slowestMillis);
            assertTrue(slowestMillis < DEADLINE_MILLIS + MARGIN_MILLIS, "slowest call " + slowestMillis + " ms for a " +
                DEADLINE_MILLIS + " ms deadline");
            assertEquals(0, fromTheStore.sum(), "no answer 300 ms late can be used; every call was decided locally");
            // Probes every 50-75 ms for the outage's first 400 ms (two intervals), then every 200-300 ms,
            // each plus the 50 ms deadline it waits: at most 4 + 7 in 2 s; the four threads' calls in flight
            // when the store slowed down open the circuit. Without a half-open circuit each probe round
            // would send every thread's call (about 4 x 11 = 44).
            assertTrue(tried <= threads + 11 + 2, tried + " of " + calls.sum() + " calls were sent to the store");
            assertTrue(calls.sum() > 1000, "the callers kept going: " + calls.sum());
            assertTrue(client.stats().circuitOpen());

            // Fast again: the next probe's answer closes the circuit and the store decides.
            proxy.delayAnswers(0);
            final Decision[] d = {client.acquireBlocking(Descriptor.of("steady", "/hot"), 1)};
            Await.until("the store to decide again", Duration.ofSeconds(5), () ->
                !(d[0] = client.acquireBlocking(Descriptor.of("steady", "/hot"), 1)).degraded());
            assertFalse(d[0].degraded(), "the store decides again once it answers in time: " + d[0]);
            assertFalse(client.stats().circuitOpen());
            // The answers that came too late were dropped: the same connection keeps serving.
            for (int i = 0; i < 20; i++)
            {
                final Decision after = client.acquireBlocking(Descriptor.of("after-" + i, "/v1/orders/1"), 1);
                assertFalse(after.degraded() && after.reason() != ReasonCode.RATE_LIMITED, "the ramp may refuse, not fail: " + after);
            }
        }
    }
}
