package dev.limiter.server.history;

import dev.limiter.server.control.PolicyState;
import io.micrometer.core.instrument.MeterRegistry;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The node's own bounded history, served as {@code GET /v1/history?since=MILLIS}: one point every
 * {@value #INTERVAL_MILLIS} ms, the last {@value #CAPACITY} of them (24 hours) in a ring, each holding
 * what happened in its interval (deltas, not totals): per policy the decisions allowed and denied, the
 * shadow evaluations that would have denied or allowed and the false rejections (accepted appeals);
 * the decision latency p99 at its end; and whether an SDK reported deciding on its own during it.
 *
 * <p>A thread of its own samples the node's meters ({@link MeterHistorySource}) at each interval:
 * the decision path does no work for it. Memory is bounded by the ring: a point keeps only the
 * policies that counted something in it. Degraded windows are looked up when asked, from the
 * replicated SDK trail, so a window reported late still marks the points it covered. An answer ends
 * with the interval in progress ({@code "partial":true}), so a report made right after traffic shows it.
 */
public final class NodeHistory implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(NodeHistory.class);
    /** One point per this many milliseconds. */
    public static final long INTERVAL_MILLIS = 10_000;
    /** Points kept: 24 hours of {@link #INTERVAL_MILLIS}. */
    public static final int CAPACITY = 8_640;

    private final String node;
    private final String region;
    private final Supplier<HistoryReading> source;
    private final Supplier<List<DegradedSpans.Span>> degraded;
    private final LongSupplier wallMillis;
    private final long intervalMillis;
    private final Point[] ring;
    /** Index the next point goes to, and how many are held (guarded by this). */
    private int next;
    private int size;
    /** The reading at the end of the last point (guarded by this). */
    private HistoryReading last;
    private long lastMillis;
    private ScheduledExecutorService thread;

    /** One interval: its end, the policies that counted something ({@link HistoryReading#KINDS} each) and the p99. */
    private record Point(long atMillis, String[] policies, long[] counts, long latencyP99Micros)
    {
    }

    NodeHistory(final String node, final String region, final Supplier<HistoryReading> source,
        final Supplier<List<DegradedSpans.Span>> degraded, final LongSupplier wallMillis, final long intervalMillis,
        final int capacity)
    {
        if (intervalMillis < 1 || capacity < 1)
        {
            throw new IllegalArgumentException("history interval and capacity must be positive, were "
                + intervalMillis + " ms and " + capacity);
        }
        this.node = node;
        this.region = region;
        this.source = source;
        this.degraded = degraded;
        this.wallMillis = wallMillis;
        this.intervalMillis = intervalMillis;
        this.ring = new Point[capacity];
        this.last = source.get();
        this.lastMillis = wallMillis.getAsLong();
    }

    /**
     * The history of a node whose meters are in {@code registry} and whose SDK trail is in {@code state}.
     *
     * @param region the node's region, or null outside regions
     */
    public static NodeHistory of(final String node, final String region, final MeterRegistry registry,
        final PolicyState state)
    {
        return new NodeHistory(node, region, new MeterHistorySource(registry), degradedOf(state),
            System::currentTimeMillis, INTERVAL_MILLIS, CAPACITY);
    }

    /** The SDKs' degraded windows the control state holds now. */
    static Supplier<List<DegradedSpans.Span>> degradedOf(final PolicyState state)
    {
        return () -> DegradedSpans.of(state.audit(r -> DegradedSpans.ACTION.equals(r.getAction()), Integer.MAX_VALUE));
    }

    /** Samples every interval on a thread of its own until {@link #close()}. */
    public void start()
    {
        thread = Executors.newSingleThreadScheduledExecutor(r ->
        {
            final Thread sampling = new Thread(r, "limiter-history");
            sampling.setDaemon(true);
            return sampling;
        });
        thread.scheduleAtFixedRate(this::sampleQuietly, intervalMillis, intervalMillis, TimeUnit.MILLISECONDS);
    }

    private void sampleQuietly()
    {
        try
        {
            sample();
        }
        catch (final RuntimeException e)
        {
            LOG.warn("history: a sample failed (the next one covers its interval): {}", e.toString());
        }
    }

    /** Ends the current interval: stores what was counted since the last point as a new one, the oldest going. */
    synchronized void sample()
    {
        final HistoryReading now = source.get();
        ring[next] = point(wallMillis.getAsLong(), now);
        next = (next + 1) % ring.length;
        size = Math.min(size + 1, ring.length);
        last = now;
        lastMillis = ring[(next + ring.length - 1) % ring.length].atMillis();
    }

    private Point point(final long atMillis, final HistoryReading now)
    {
        final Map<String, long[]> changed = new TreeMap<>();
        now.counts().forEach((policy, counts) ->
        {
            final long[] before = last.counts().get(policy);
            final long[] delta = new long[HistoryReading.KINDS];
            boolean any = false;
            for (int k = 0; k < delta.length; k++)
            {
                // Counters only grow; a meter seen for the first time counted all of it here.
                delta[k] = Math.max(0, counts[k] - (before == null ? 0 : before[k]));
                any |= delta[k] != 0;
            }
            if (any)
            {
                changed.put(policy, delta);
            }
        });
        final long[] counts = new long[changed.size() * HistoryReading.KINDS];
        int i = 0;
        for (final long[] delta : changed.values())
        {
            System.arraycopy(delta, 0, counts, i, delta.length);
            i += delta.length;
        }
        return new Point(atMillis, changed.keySet().toArray(new String[0]), counts, now.latencyP99Micros());
    }

    /**
     * The points that end after {@code sinceMillis}, oldest first, then the interval in progress, as the
     * admin API's JSON: {@code {"node","region","intervalMs","capacity","points":[{"atMillis","policies":[{"policy",
     * "allowed","denied","shadowWouldDeny","shadowWouldAllow","falseRejections"}],"latencyP99Micros","degraded"}]}}.
     */
    public String json(final long sinceMillis)
    {
        final List<DegradedSpans.Span> spans = degraded.get();
        final List<Point> points = new ArrayList<>();
        final long partialFrom;
        synchronized (this)
        {
            for (int i = 0; i < size; i++)
            {
                final Point point = ring[(next - size + i + ring.length) % ring.length];
                if (point.atMillis() > sinceMillis)
                {
                    points.add(point);
                }
            }
            final long now = wallMillis.getAsLong();
            points.add(point(Math.max(now, lastMillis), source.get()));
            partialFrom = lastMillis;
        }
        final StringBuilder json = new StringBuilder(256 + 128 * points.size());
        json.append("{\"node\":");
        string(json, node);
        if (region != null)
        {
            json.append(",\"region\":");
            string(json, region);
        }
        json.append(",\"intervalMs\":").append(intervalMillis).append(",\"capacity\":").append(ring.length)
            .append(",\"points\":[");
        for (int p = 0; p < points.size(); p++)
        {
            final Point point = points.get(p);
            final boolean partial = p == points.size() - 1;
            final long from = partial ? partialFrom : point.atMillis() - intervalMillis;
            json.append(p == 0 ? "" : ",").append("{\"atMillis\":").append(point.atMillis()).append(",\"policies\":[");
            for (int i = 0; i < point.policies().length; i++)
            {
                final int at = i * HistoryReading.KINDS;
                final long[] c = point.counts();
                json.append(i == 0 ? "" : ",").append("{\"policy\":");
                string(json, point.policies()[i]);
                json.append(",\"allowed\":").append(c[at + HistoryReading.ALLOWED])
                    .append(",\"denied\":").append(c[at + HistoryReading.DENIED])
                    .append(",\"shadowWouldDeny\":").append(c[at + HistoryReading.SHADOW_WOULD_DENY])
                    .append(",\"shadowWouldAllow\":").append(c[at + HistoryReading.SHADOW_WOULD_ALLOW])
                    .append(",\"falseRejections\":").append(c[at + HistoryReading.FALSE_REJECTIONS]).append('}');
            }
            json.append("],\"latencyP99Micros\":").append(point.latencyP99Micros())
                .append(",\"degraded\":").append(spans.stream().anyMatch(s -> s.overlaps(from, point.atMillis())));
            json.append(partial ? ",\"partial\":true}" : "}");
        }
        return json.append("]}\n").toString();
    }

    private static void string(final StringBuilder json, final String value)
    {
        json.append('"');
        for (int i = 0; i < value.length(); i++)
        {
            final char c = value.charAt(i);
            if (c == '"' || c == '\\')
            {
                json.append('\\').append(c);
            }
            else if (c < 0x20)
            {
                json.append(String.format("\\u%04x", (int)c));
            }
            else
            {
                json.append(c);
            }
        }
        json.append('"');
    }

    @Override
    public void close()
    {
        if (thread != null)
        {
            thread.shutdownNow();
        }
    }
}
