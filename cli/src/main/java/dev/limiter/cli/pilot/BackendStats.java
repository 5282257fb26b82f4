package dev.limiter.cli.pilot;

import org.HdrHistogram.Histogram;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the sample backend answered during one pilot phase, per tenant: requests, 5xx answers and
 * the latency from arrival to answer (queueing included); and the deepest queue it saw. At most
 * {@link #MAX_TENANTS} tenant rows; any further tenant is counted under "(other)".
 */
public final class BackendStats
{
    static final int MAX_TENANTS = 1_000;
    private static final long MAX_NANOS = 60_000_000_000L;

    private final ConcurrentHashMap<String, Row> rows = new ConcurrentHashMap<>();
    private final AtomicInteger maxQueueDepth = new AtomicInteger();

    /** One tenant's answers. */
    public static final class Row
    {
        private long requests;
        private long errors;
        private final Histogram latency = new Histogram(MAX_NANOS, 2);

        synchronized void add(final int status, final long nanos)
        {
            requests++;
            if (status >= 500)
            {
                errors++;
            }
            latency.recordValue(Math.max(0, Math.min(nanos, MAX_NANOS)));
        }

        synchronized void addAll(final Row other)
        {
            synchronized (other)
            {
                requests += other.requests;
                errors += other.errors;
                latency.add(other.latency);
            }
        }

        public synchronized long requests()
        {
            return requests;
        }

        /** Answers with a 5xx status. */
        public synchronized long errors()
        {
            return errors;
        }

        /** The 99th percentile of arrival-to-answer time, in milliseconds (0 without requests). */
        public synchronized double p99Millis()
        {
            return requests == 0 ? 0 : latency.getValueAtPercentile(99) / 1e6;
        }
    }

    void answered(final String tenant, final int status, final long nanos)
    {
        final String key = rows.size() >= MAX_TENANTS && !rows.containsKey(tenant) ? "(other)" : tenant;
        rows.computeIfAbsent(key, k -> new Row()).add(status, nanos);
    }

    void queueDepthSeen(final int depth)
    {
        maxQueueDepth.accumulateAndGet(depth, Math::max);
    }

    /** The deepest the queue (waiting and in service) was in this phase. */
    public int maxQueueDepth()
    {
        return maxQueueDepth.get();
    }

    /** The rows by tenant, sorted by name. */
    public Map<String, Row> byTenant()
    {
        return new TreeMap<>(rows);
    }

    /** Every tenant's answers together. */
    public Row total()
    {
        final Row all = new Row();
        rows.values().forEach(all::addAll);
        return all;
    }
}
