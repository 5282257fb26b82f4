package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Many threads hammering one key through the SDK for a few seconds are granted exactly what the
 * arithmetic allows: burst + rate x (time the clock moved), never more.
 */
@Timeout(60)
class ConcurrencyTest
{
    @TempDir
    Path dir;

    @Test
    void manyThreadsOnOneKeyAreGrantedExactlyWhatTheArithmeticAllowsWithShardsOnEventLoops() throws Exception
    {
        final ManualClock clock = new ManualClock(77 * SECOND);
        hammer(clock, TestNode.start(dir, clock, 2));
    }

    @Test
    void manyThreadsOnOneKeyAreGrantedExactlyWhatTheArithmeticAllowsWithDedicatedShardThreads() throws Exception
    {
        final ManualClock clock = new ManualClock(77 * SECOND);
        hammer(clock, TestNode.startWithShardThreads(dir, clock, 2));
    }

    private static void hammer(final ManualClock clock, final StoreServer node) throws Exception
    {
        final long startNanos = clock.nanoTime();
        try (StoreServer server = node;
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port())
                 .connections(4).ioThreads(2).deadline(Duration.ofSeconds(5)).build())
        {
            final Descriptor key = Descriptor.of("hammered", "/hot"); // 100/s, burst 50, one global bucket
            final LongAdder granted = new LongAdder();
            // The bucket comes into being (full) at the first request: make that the start of the count.
            assertTrue(client.acquireBlocking(key, 1).allowed());
            granted.increment();
            final LongAdder answered = new LongAdder();
            final AtomicBoolean running = new AtomicBoolean(true);
            final List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 8; t++)
            {
                final boolean blocking = t % 2 == 0;
                final Thread thread = new Thread(() ->
                {
                    while (running.get())
                    {
                        if (blocking)
                        {
                            final Decision d = client.acquireBlocking(key, 1);
                            granted.add(d.allowed() ? 1 : 0);
                            answered.increment();
                        }
                        else
                        {
                            final List<CompletableFuture<Decision>> window = new ArrayList<>();
                            for (int i = 0; i < 32; i++)
                            {
                                window.add(client.acquire(key, 1));
                            }
                            for (final CompletableFuture<Decision> f : window)
                            {
                                granted.add(f.join().allowed() ? 1 : 0);
                                answered.increment();
                            }
                        }
                    }
                }, "hammer-" + t);
                threads.add(thread);
                thread.start();
            }
            // Move the clock 1 ms at a time for 2 s of wall time while the threads hammer.
            final long wallEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            while (System.nanoTime() < wallEnd)
            {
                clock.advance(SECOND / 1000);
                // the manual clock moves 1 ms per real millisecond while the callers run
                Thread.sleep(1);
            }
            running.set(false);
            for (final Thread thread : threads)
            {
                thread.join(10_000);
            }
            // Drain whatever the last clock step refilled, with the clock now still.
            while (client.acquireBlocking(key, 1).allowed())
            {
                granted.increment();
            }
            final long elapsed = clock.nanoTime() - startNanos;
            final long allowedByArithmetic = 50 + elapsed * 100 / SECOND;
            assertTrue(answered.sum() > 1000, "the key was hammered: " + answered.sum() + " answers");
            assertEquals(allowedByArithmetic, granted.sum(),
                "granted over " + elapsed / 1_000_000 + " ms of cluster time, " + answered.sum() + " answers");
        }
    }
}
