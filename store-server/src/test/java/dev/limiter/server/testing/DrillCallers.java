package dev.limiter.server.testing;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;

/**
 * Callers of a drill: threads that each ask the SDK, blocking, in turn for one token of each of
 * their keys (a STRICT bucket, a STRICT ledger, a FAST bucket), and record every call: which key,
 * when it was made, when it returned, and whether a node decided it (a decision the SDK made
 * itself, {@link Decision#degraded()}, and a call that failed are not a node's). A caller pauses
 * 1 ms between calls, as a service does work between requests: callers spinning on the SDK's
 * local decisions during an outage would take the cores the nodes need to elect.
 */
public final class DrillCallers implements AutoCloseable
{
    /** One call: of key {@code key} (an index of the callers' keys), when, whether a node decided it, allowed. */
    public record Call(int key, long sentNanos, long returnedNanos, boolean nodeDecided, boolean allowed)
    {
        public long millis()
        {
            return (returnedNanos - sentNanos) / 1_000_000;
        }
    }

    private final Queue<Call> calls = new ConcurrentLinkedQueue<>();
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean stop;

    public DrillCallers(final LimiterClient client, final int callers, final List<Descriptor> keys)
    {
        for (int t = 0; t < callers; t++)
        {
            final Thread thread = new Thread(() -> call(client, keys), "drill-caller-" + t);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
    }

    private void call(final LimiterClient client, final List<Descriptor> keys)
    {
        for (int i = 0; !stop; i++)
        {
            final int key = i % keys.size();
            final long sent = System.nanoTime();
            try
            {
                final Decision decision = client.acquireBlocking(keys.get(key), 1);
                calls.add(new Call(key, sent, System.nanoTime(), !decision.degraded(), decision.allowed()));
            }
            catch (final LimiterException e)
            {
                calls.add(new Call(key, sent, System.nanoTime(), false, false)); // no decision: never a grant
            }
            LockSupport.parkNanos(1_000_000L);
        }
    }

    /** Stops the callers (each finishes the call it is in) and returns every call they made. */
    public List<Call> stop() throws InterruptedException
    {
        stop = true;
        for (final Thread thread : threads)
        {
            thread.join(5000);
        }
        return List.copyOf(calls);
    }

    @Override
    public void close() throws InterruptedException
    {
        stop();
    }
}
