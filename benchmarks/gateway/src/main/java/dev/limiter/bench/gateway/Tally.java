package dev.limiter.bench.gateway;

import org.HdrHistogram.Histogram;

import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * One window's answers: latency of every answered request (ns, HdrHistogram, 3 digits), counts by
 * outcome, and the JSON line the summary reads. Recorded from the load generator's I/O threads.
 */
final class Tally
{
    static final long MAX_LATENCY_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final Histogram latency = new Histogram(MAX_LATENCY_NANOS, 3);
    private long ok;
    private long refused;
    private long otherStatus;
    private long errors;
    private String firstProblem;

    /** An answer with {@code status}, {@code nanos} after the request was due (open loop) or sent (closed). */
    synchronized void answered(final int status, final long nanos)
    {
        latency.recordValue(Math.max(0, Math.min(nanos, MAX_LATENCY_NANOS)));
        if (status >= 200 && status < 300)
        {
            ok++;
        }
        else if (status == 429)
        {
            refused++;
        }
        else
        {
            otherStatus++;
            if (firstProblem == null)
            {
                firstProblem = "status " + status;
            }
        }
    }

    /** A request that got no answer (connection failure, timeout); not in the latency. */
    synchronized void failed(final Throwable failure)
    {
        errors++;
        if (firstProblem == null)
        {
            firstProblem = String.valueOf(failure);
        }
    }

    synchronized long answers()
    {
        return ok + refused + otherStatus;
    }

    synchronized long ended()
    {
        return answers() + errors;
    }

    synchronized String firstProblem()
    {
        return firstProblem;
    }

    /** Microseconds at {@code percentile} (0 to 100), or 0 when nothing was answered. */
    synchronized double percentileMicros(final double percentile)
    {
        return latency.getTotalCount() == 0 ? 0 : latency.getValueAtPercentile(percentile) / 1e3;
    }

    /**
     * The summary line of a measured window of {@code seconds}: throughput is answers (any status)
     * per second; latency in microseconds.
     */
    synchronized String json(final String config, final String load, final int round, final double seconds,
        final String uptime)
    {
        return String.format(Locale.ROOT,
            "{\"config\":\"%s\",\"load\":\"%s\",\"round\":%d,\"seconds\":%.1f,\"throughput\":%.1f,"
                + "\"p50Us\":%.1f,\"p99Us\":%.1f,\"p999Us\":%.1f,\"maxUs\":%.1f,\"ok\":%d,\"refused\":%d,"
                + "\"otherStatus\":%d,\"errors\":%d,\"uptime\":\"%s\"}",
            config, load, round, seconds, answers() / seconds, percentileMicros(50), percentileMicros(99),
            percentileMicros(99.9), latency.getTotalCount() == 0 ? 0 : latency.getMaxValue() / 1e3, ok, refused,
            otherStatus, errors, uptime.replace("\"", "'").trim());
    }
}
