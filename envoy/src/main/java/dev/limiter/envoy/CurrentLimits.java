package dev.limiter.envoy;

import dev.limiter.client.PolicyCache;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;

import java.util.HashMap;
import java.util.Map;

/**
 * The {@code current_limit} Envoy is told for each policy: its rate in Envoy's units, named by
 * the policy id. Rebuilt from the SDK's policy cache whenever a new set arrives; read by any thread.
 */
final class CurrentLimits
{
    private static final long SECOND = 1_000_000_000L;
    private static final long[] UNIT_NANOS = {SECOND, 60 * SECOND, 3_600 * SECOND, 86_400 * SECOND, 7 * 86_400 * SECOND};
    private static final RateLimit.Unit[] UNITS = {RateLimit.Unit.SECOND, RateLimit.Unit.MINUTE, RateLimit.Unit.HOUR,
        RateLimit.Unit.DAY, RateLimit.Unit.WEEK};

    private volatile Map<String, RateLimit> byPolicy = Map.of();

    /** Follows {@code cache}: every set it receives replaces the limits. */
    void follow(final PolicyCache cache)
    {
        cache.current().ifPresent(snapshot -> update(snapshot.policies()));
        cache.onChange(snapshot -> update(snapshot.policies()));
    }

    void update(final PolicySet set)
    {
        final Map<String, RateLimit> limits = new HashMap<>();
        for (final Policy policy : set.getPoliciesList())
        {
            if (policy.getMode() != Mode.SHADOW && policy.hasSelector() && policy.getSelector().hasEnvoy())
            {
                limits.put(policy.getId(), of(policy));
            }
        }
        byPolicy = Map.copyOf(limits);
    }

    /** The limit to report for a decision of {@code policyId}, or null when the policy is not known here. */
    RateLimit forPolicy(final String policyId)
    {
        return policyId == null ? null : byPolicy.get(policyId);
    }

    /**
     * A policy's rate as Envoy states limits: requests per second, minute, hour, day or week (per
     * month for a calendar-month window). A period that is no whole unit is converted exactly into
     * the smallest unit that allows it (100 per 10 s: 10 per second), else rounded down in the
     * smallest unit that holds at least one request.
     */
    static RateLimit of(final Policy policy)
    {
        final RateLimit.Builder limit = RateLimit.newBuilder().setName(policy.getId());
        if (policy.getCalendarWindow() == CalendarWindow.MONTH)
        {
            return limit.setUnit(RateLimit.Unit.MONTH).setRequestsPerUnit(clamp(policy.getRate())).build();
        }
        final long rate = policy.getRate();
        final long period = policy.hasPeriod() ? policy.getPeriod().getSeconds() * SECOND + policy.getPeriod().getNanos() : SECOND;
        int rounded = -1;
        for (int u = 0; u < UNITS.length; u++)
        {
            final double perUnit = (double)rate * UNIT_NANOS[u] / period;
            if (perUnit == Math.rint(perUnit) && perUnit >= 1)
            {
                return limit.setUnit(UNITS[u]).setRequestsPerUnit(clamp((long)perUnit)).build();
            }
            if (rounded < 0 && perUnit >= 1)
            {
                rounded = u;
            }
        }
        final int u = rounded < 0 ? UNITS.length - 1 : rounded;
        return limit.setUnit(UNITS[u]).setRequestsPerUnit(clamp((long)((double)rate * UNIT_NANOS[u] / period))).build();
    }

    /** A count as Envoy's uint32. */
    static int clamp(final long count)
    {
        return (int)Math.min(Math.max(count, 0), 0xFFFF_FFFFL);
    }
}
