package dev.limiter.client;

import com.google.protobuf.Timestamp;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.policy.DegradedWindow;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * Sends each outage window this client lived through (start, end, local decisions by policy and
 * mode) to the cluster's audit log as a DEGRADED_REPORT, trying each connection until one (the
 * leader's) takes it. A window no node takes (the cluster went down again) is kept, up to
 * {@value #MAX_UNREPORTED_WINDOWS}, and sent before the next one: at least once.
 */
final class OutageReports
{
    private static final Logger LOG = LoggerFactory.getLogger(OutageReports.class);
    static final int MAX_UNREPORTED_WINDOWS = 64;

    private final String instanceId;
    private final Connection[] connections;
    private final BooleanSupplier closed;
    private final AtomicLong reported = new AtomicLong();
    /** Windows no node took yet (encoded), oldest first. */
    private final ConcurrentLinkedQueue<byte[]> unreported = new ConcurrentLinkedQueue<>();

    OutageReports(final String instanceId, final Connection[] connections, final BooleanSupplier closed)
    {
        this.instanceId = instanceId;
        this.connections = connections;
        this.closed = closed;
    }

    /** Windows the cluster took. */
    long reported()
    {
        return reported.get();
    }

    /**
     * Reports the window that just ended.
     *
     * @param decisionsBefore the local decision counts by key when it began
     * @param decisionsNow    the counts now
     */
    void report(final long startMillis, final long endMillis, final Map<String, Long> decisionsBefore, final Map<String, Long> decisionsNow)
    {
        final DegradedWindow.Builder window = DegradedWindow.newBuilder()
            .setClient(instanceId)
            .setStart(timestamp(startMillis))
            .setEnd(timestamp(endMillis));
        decisionsNow.forEach((key, n) ->
        {
            final long delta = n - decisionsBefore.getOrDefault(key, 0L);
            if (delta > 0)
            {
                window.putDecisions(key, delta);
            }
        });
        final byte[] body = window.build().toByteArray();
        // Windows no node took before (sent while the cluster was going down again) go first.
        byte[] earlier;
        while ((earlier = unreported.poll()) != null)
        {
            send(earlier, 0, 0);
        }
        send(body, 0, 0);
    }

    private static Timestamp timestamp(final long millis)
    {
        return Timestamp.newBuilder().setSeconds(millis / 1000).setNanos((int)(millis % 1000) * 1_000_000).build();
    }

    private void send(final byte[] body, final int index, final int round)
    {
        if (closed.getAsBoolean())
        {
            return; // the window stays in this client's log and metrics only
        }
        if (round >= 3)
        {
            // No node took it: keep it for the next time a node answers after an outage (bounded).
            unreported.add(body);
            while (unreported.size() > MAX_UNREPORTED_WINDOWS)
            {
                unreported.poll();
                LOG.warn("more than {} degraded windows not reported to the cluster: the oldest is dropped", MAX_UNREPORTED_WINDOWS);
            }
            return;
        }
        final Connection connection = connections[index % connections.length];
        connection.request(MessageType.DEGRADED_REPORT, body, System.nanoTime() + TimeUnit.SECONDS.toNanos(2))
            .whenComplete((done, failure) ->
            {
                if (failure == null)
                {
                    reported.incrementAndGet();
                }
                else
                {
                    final int next = index + 1;
                    send(body, next, round + (next % connections.length == 0 ? 1 : 0));
                }
            });
    }
}
