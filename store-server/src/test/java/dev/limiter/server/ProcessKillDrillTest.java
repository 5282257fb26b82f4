package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import dev.limiter.server.testing.ProcessCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The leader as a separate process, killed with SIGKILL under load: a new leader serves quickly
 * (the time is printed; asserted under 2 s on this shared machine) and STRICT grants never exceed
 * what the arithmetic allows over the whole run.
 */
@Timeout(120)
class ProcessKillDrillTest
{
    @TempDir
    Path dir;

    @Test
    void killingTheLeaderProcessWithSigkillUnderLoad() throws Exception
    {
        try (ProcessCluster cluster = new ProcessCluster(dir, 3))
        {
            drill(cluster);
        }
    }

    /** Memory-first members acknowledge entries the kernel holds: a killed process loses none of them. */
    @Test
    void killingTheLeaderProcessWithSigkillUnderLoadWithMemoryFirstCommits() throws Exception
    {
        try (ProcessCluster cluster = new ProcessCluster(dir, 3, 1, List.of("--memory-first")))
        {
            drill(cluster);
        }
    }

    private void drill(final ProcessCluster cluster) throws Exception
    {
        final String first = cluster.awaitLeader(null);
        final List<String> endpoints = new ArrayList<>();
        cluster.ports().values().forEach(p -> endpoints.add("127.0.0.1:" + p));
        final Descriptor strictKey = Descriptor.of("any", "/strict"); // 20/s, burst 20, STRICT, one bucket
        final LongAdder granted = new LongAdder();
        final LongAdder local = new LongAdder();
        final AtomicLong lastSuccess = new AtomicLong();
        final AtomicLong killedAt = new AtomicLong();
        final AtomicLong firstAfterKill = new AtomicLong();
        final AtomicBoolean running = new AtomicBoolean(true);
        final long start = System.nanoTime();
        // The circuit probes every 50 ms here (default 500 ms): the drill measures when the cluster can
        // answer again, not the SDK's probing cadence (docs/cluster.md gives both).
        try (LimiterClient client = LimiterClient.builder().endpoints(String.join(",", endpoints)).connections(1)
            .deadline(Duration.ofSeconds(2)).circuit(3, Duration.ofMillis(50)).build())
        {
            final List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++)
            {
                final Thread thread = new Thread(() ->
                {
                    while (running.get())
                    {
                        try
                        {
                            final long asked = System.nanoTime();
                            final Decision d = client.acquireBlocking(strictKey, 1);
                            if (d.degraded())
                            {
                                // The SDK decided this itself: no node answered, so it is not an answer here.
                                // Local decisions take microseconds; a caller spinning on them (hundreds of
                                // thousands a second) would take the cores the cluster needs to elect and
                                // measure its own starvation (runs of 2.5-3 s here). A service does work
                                // between requests: 1 ms.
                                local.increment();
                                LockSupport.parkNanos(1_000_000L);
                                continue;
                            }
                            final long now = System.nanoTime();
                            lastSuccess.set(now);
                            if (killedAt.get() != 0 && asked - killedAt.get() > 0 && firstAfterKill.get() == 0)
                            {
                                firstAfterKill.compareAndSet(0, now);
                            }
                            granted.add(d.allowed() ? 1 : 0);
                        }
                        catch (final LimiterException e)
                        {
                            // refused or timed out while there is no leader: never a grant
                        }
                    }
                });
                threads.add(thread);
                thread.start();
            }
            // the load runs against the first leader
            Thread.sleep(1500);
            killedAt.set(System.nanoTime());
            cluster.kill(first); // SIGKILL
            cluster.awaitLeader(first);
            // and against the new one
            Thread.sleep(1500);
            running.set(false);
            for (final Thread thread : threads)
            {
                thread.join(10_000);
            }
        }
        final double seconds = (System.nanoTime() - start) / 1e9;
        final long bound = 20 + (long)Math.ceil(20 * seconds);
        assertTrue(granted.sum() <= bound, "STRICT grants " + granted.sum() + " exceed burst + rate x time = " + bound);
        assertTrue(firstAfterKill.get() != 0, "a new leader answered a call made after the kill");
        final long recoveryMillis = (firstAfterKill.get() - killedAt.get()) / 1_000_000;
        System.out.println("first node answer " + recoveryMillis + " ms after SIGKILL of the leader; STRICT grants " + granted.sum() +
            " of at most " + bound + "; " + local.sum() + " decisions the SDK made itself meanwhile");
        // The aim is 1 s (and the in-process drill asserts it); four JVMs share two cores here while the
        // rest of the suite runs, so this drill allows 2 s: five runs measured 0.60-0.93 s.
        assertTrue(recoveryMillis < 2000, "first answer " + recoveryMillis + " ms after SIGKILL of the leader");
    }
}
