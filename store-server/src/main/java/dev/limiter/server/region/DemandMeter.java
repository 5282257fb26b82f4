package dev.limiter.server.region;

import dev.limiter.protocol.CompiledPolicy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntToLongFunction;
import java.util.function.LongSupplier;

/**
 * This node's demand per regional policy: decisions its shards were asked per second, smoothed
 * over about a second (an exponential average whose weight is the seconds since the last measure,
 * at most 1). Measured on one thread (the exchange's tick); read from any.
 */
final class DemandMeter
{
    /** Decisions asked of a policy ordinal so far, over all of this node's shards. */
    private final IntToLongFunction asked;
    /** A monotonic clock, in nanoseconds. */
    private final LongSupplier nanos;
    private final Map<String, Double> demand = new ConcurrentHashMap<>();
    private final Map<Integer, Long> askedBefore = new HashMap<>();
    private long measuredAt;

    /**
     * @param asked decisions asked of a policy ordinal so far, over all of this node's shards
     * @param nanos a monotonic clock, in nanoseconds
     */
    DemandMeter(final IntToLongFunction asked, final LongSupplier nanos)
    {
        this.asked = asked;
        this.nanos = nanos;
        this.measuredAt = nanos.getAsLong();
    }

    /** The first measure counts from now. */
    void start()
    {
        measuredAt = nanos.getAsLong();
    }

    /**
     * Folds in what was asked of each policy since the last measure (a policy's first measure only
     * learns its count: it adds no demand).
     */
    void measure(final List<CompiledPolicy> regional)
    {
        final long at = nanos.getAsLong();
        final double seconds = Math.max(1e-3, (at - measuredAt) / 1e9);
        measuredAt = at;
        final double alpha = Math.min(1.0, seconds); // about a second of memory
        for (final CompiledPolicy policy : regional)
        {
            final long now = asked.applyAsLong(policy.ordinal());
            final Long before = askedBefore.put(policy.ordinal(), now);
            final double rate = before == null ? 0 : Math.max(0, now - before) / seconds;
            demand.merge(policy.id(), alpha * rate, (old, add) -> old + alpha * (rate - old));
        }
    }

    /** Decisions per second asked of policy {@code id} here, smoothed; 0 before any. */
    double of(final String id)
    {
        return demand.getOrDefault(id, 0.0);
    }
}
