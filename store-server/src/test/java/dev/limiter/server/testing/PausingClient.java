package dev.limiter.server.testing;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * A service in a JVM of its own that forces full collections while eight threads make blocking
 * calls (1 ms of their own work between calls): run as a separate process by
 * {@code SdkStartAndPauseTest}, with a one-threaded collector so that its pauses stop it alone, not
 * the node it calls. Prints one line: {@code RESULT node=N local=N errors=N pauses=N pausedTimeouts=N lateDeadlines=N
 * windows=N minOpen=N circuitOpened=B}.
 */
public final class PausingClient
{
    private PausingClient()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final String endpoint = args[0];
        final long seconds = Long.parseLong(args[1]);
        final long deadlineMillis = Long.parseLong(args[2]);
        final AtomicBoolean circuitOpened = new AtomicBoolean();
        final int[] minOpen = {Integer.MAX_VALUE};
        // The live set is made first: its allocation is a start-up of its own, not what is measured.
        final List<long[]> live = new ArrayList<>();
        for (int i = 0; i < 400_000; i++)
        {
            live.add(new long[64]);
        }
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoint)
            .deadline(Duration.ofMillis(deadlineMillis)).build())
        {
            final long nanos = seconds * 1_000_000_000L;
            final long end = System.nanoTime() + nanos;
            // A full collection of a live set worth collecting every 200 ms while the callers call.
            final long[] counts = hammer(client, nanos, 1_000_000L, () ->
            {
                while (System.nanoTime() < end - 500_000_000L)
                {
                    System.gc();
                    circuitOpened.compareAndSet(false, client.stats().circuitOpen());
                    minOpen[0] = Math.min(minOpen[0], client.stats().openConnections());
                    LockSupport.parkNanos(200_000_000L);
                }
            });
            System.out.println("RESULT node=" + counts[2] + " local=" + counts[1] + " errors=" + counts[0]
                + " pauses=" + client.stats().pausesNoticed() + " pausedTimeouts="
                + client.stats().pausedTimeouts() + " lateDeadlines=" + client.stats().lateDeadlines()
                + " windows=" + client.stats().degradedWindowsReported() + " minOpen=" + minOpen[0]
                + " circuitOpened=" + circuitOpened.get() + " live=" + live.size());
        }
    }

    /**
     * Eight threads of blocking calls for {@code nanos}, each pausing {@code thinkNanos} between
     * calls: {errors, decided by the SDK itself, decided by a node}.
     */
    public static long[] hammer(final LimiterClient client, final long nanos, final long thinkNanos,
        final Runnable meanwhile) throws InterruptedException
    {
        final LongAdder errors = new LongAdder();
        final LongAdder local = new LongAdder();
        final LongAdder node = new LongAdder();
        final long end = System.nanoTime() + nanos;
        final List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++)
        {
            final int thread = t;
            threads.add(new Thread(() ->
            {
                for (int i = 0; System.nanoTime() < end; i++)
                {
                    try
                    {
                        final Decision d = client.acquireBlocking(Descriptor.of("tenant-" + thread + "-" + i,
                            "/v1/orders/1"), 1);
                        (d.degraded() ? local : node).increment();
                        if (thinkNanos > 0)
                        {
                            java.util.concurrent.locks.LockSupport.parkNanos(thinkNanos);
                        }
                    }
                    catch (final RuntimeException e)
                    {
                        errors.increment();
                    }
                }
            }));
        }
        threads.forEach(Thread::start);
        try
        {
            meanwhile.run();
        }
        finally
        {
            for (final Thread thread : threads)
            {
                thread.join();
            }
        }
        return new long[] {errors.sum(), local.sum(), node.sum()};
    }
}
