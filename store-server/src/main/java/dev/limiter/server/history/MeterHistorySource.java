package dev.limiter.server.history;

import io.micrometer.core.instrument.Measurement;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Statistic;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Reads a {@link HistoryReading} from the node's meter registry: the very counters {@code /metrics}
 * exports (which read the shards' per-policy counts), so the history and Prometheus agree and the
 * decision path does no work for either.
 *
 * <p>False rejections come from {@value #FALSE_REJECTIONS}, counted from the applied appeals; on a
 * build without appeals no such meter exists and they read 0.
 */
final class MeterHistorySource implements Supplier<HistoryReading>
{
    static final String DECISIONS = "limiter.decisions";
    static final String SHADOW_DECISIONS = "limiter.shadow.decisions";
    static final String FALSE_REJECTIONS = "limiter.false.rejections";
    static final String LATENCY = "limiter.decision.latency";

    private final MeterRegistry registry;

    MeterHistorySource(final MeterRegistry registry)
    {
        this.registry = registry;
    }

    @Override
    public HistoryReading get()
    {
        final Map<String, long[]> counts = new HashMap<>();
        add(counts, DECISIONS, "allowed", HistoryReading.ALLOWED);
        add(counts, DECISIONS, "denied", HistoryReading.DENIED);
        add(counts, SHADOW_DECISIONS, "would_deny", HistoryReading.SHADOW_WOULD_DENY);
        add(counts, SHADOW_DECISIONS, "would_allow", HistoryReading.SHADOW_WOULD_ALLOW);
        add(counts, FALSE_REJECTIONS, null, HistoryReading.FALSE_REJECTIONS);
        return new HistoryReading(counts, p99Micros());
    }

    /** Adds the meters named {@code name} (with {@code outcome}, unless null) to their policy's {@code kind}. */
    private void add(final Map<String, long[]> counts, final String name, final String outcome, final int kind)
    {
        for (final Meter meter : registry.find(name).meters())
        {
            final String policy = meter.getId().getTag("policy");
            if (policy == null || outcome != null && !outcome.equals(meter.getId().getTag("outcome")))
            {
                continue;
            }
            counts.computeIfAbsent(policy, p -> new long[HistoryReading.KINDS])[kind] += count(meter);
        }
    }

    private static long count(final Meter meter)
    {
        for (final Measurement measurement : meter.measure())
        {
            if (measurement.getStatistic() == Statistic.COUNT)
            {
                return (long)measurement.getValue();
            }
        }
        return 0;
    }

    private long p99Micros()
    {
        final Timer timer = registry.find(LATENCY).timer();
        if (timer == null)
        {
            return 0;
        }
        for (final ValueAtPercentile percentile : timer.takeSnapshot().percentileValues())
        {
            if (percentile.percentile() == 0.99)
            {
                return Math.round(percentile.value(TimeUnit.MICROSECONDS));
            }
        }
        return 0;
    }
}
