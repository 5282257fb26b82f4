package dev.limiter.server.testing;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.MessageType;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Asks every node directly, on a raw connection of its own, for a FAST decision every 5 ms and
 * records which node decided (answered RESULT) and which refused (ERROR, NOT_LEADER say): what
 * each node decided and when, with no SDK between, which might answer itself or try another node.
 * A probe that gets no answer within a second is not recorded, and its connection is opened again.
 */
public final class DecisionProbes implements AutoCloseable
{
    /** One probe: sent to {@code member} at {@code sentNanos}, answered at {@code answeredNanos}, decided or not. */
    public record Probe(int member, long sentNanos, long answeredNanos, boolean decided)
    {
    }

    private static final long EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    private final Queue<Probe> probes = new ConcurrentLinkedQueue<>();
    private final List<Thread> threads = new ArrayList<>();
    private final byte[] acquire;
    private volatile boolean stop;
    private volatile boolean paused;

    /** Starts probing each member at its address ({@code addresses}: member to host), on {@code port}. */
    public DecisionProbes(final Map<Integer, String> addresses, final int port, final String tenant, final String route)
    {
        acquire = RawConnection.acquireBody(AcquireCodec.encodeFields(tenant, "", "", route, "", ""));
        addresses.forEach((member, host) ->
        {
            final Thread thread = new Thread(() -> probe(member, host, port), "probe-n" + member);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        });
    }

    private void probe(final int member, final String host, final int port)
    {
        long correlation = 1;
        while (!stop)
        {
            try (RawConnection raw = new RawConnection(host, port))
            {
                raw.timeout(1000);
                while (!stop)
                {
                    if (paused)
                    {
                        LockSupport.parkNanos(EVERY_NANOS);
                        continue;
                    }
                    final long sent = System.nanoTime();
                    final RawConnection.Answer answer = raw.request(MessageType.ACQUIRE, correlation++, acquire);
                    if (answer == null)
                    {
                        break; // closed by the node: open another
                    }
                    probes.add(new Probe(member, sent, System.nanoTime(), answer.type() == MessageType.RESULT));
                    LockSupport.parkNanos(EVERY_NANOS);
                }
            }
            catch (final IOException e)
            {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // not up, or no answer in time: again
            }
        }
    }

    /** The probes sent from {@code fromNanos} (inclusive) to {@code toNanos} (exclusive), in the order recorded. */
    public List<Probe> sentBetween(final long fromNanos, final long toNanos)
    {
        return probes.stream().filter(p -> p.sentNanos() - fromNanos >= 0 && p.sentNanos() - toNanos < 0).toList();
    }

    /** Sends no probe until {@link #resume()} (one in flight is still answered and recorded). */
    public void pause()
    {
        paused = true;
    }

    public void resume()
    {
        paused = false;
    }

    /** The member that decided the latest answered probe that was decided, or 0 when none was. */
    public int lastDecider()
    {
        Probe last = null;
        for (final Probe probe : probes)
        {
            if (probe.decided() && (last == null || probe.answeredNanos() - last.answeredNanos() > 0))
            {
                last = probe;
            }
        }
        return last == null ? 0 : last.member();
    }

    @Override
    public void close() throws InterruptedException
    {
        stop = true;
        for (final Thread thread : threads)
        {
            thread.join(3000);
        }
    }
}
