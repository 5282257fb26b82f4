package dev.limiter.server.metrics;

import dev.limiter.server.control.PolicyState;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code limiter_false_rejections_total{policy}}: appeals applied against each policy, read from
 * the replicated control state, so every member exports the same value and a restarted one the
 * same as before (appeals are in its snapshot and log). A policy gets its counter at its first appeal.
 */
public final class FalseRejectionMeters
{
    private final MeterRegistry registry;
    private final PolicyState state;
    private final Set<String> metered = ConcurrentHashMap.newKeySet();

    private FalseRejectionMeters(final MeterRegistry registry, final PolicyState state)
    {
        this.registry = registry;
        this.state = state;
    }

    /** Registers the counters of the policies appealed so far, and of each policy appealed from now on. */
    public static void bind(final MeterRegistry registry, final PolicyState state)
    {
        final FalseRejectionMeters meters = new FalseRejectionMeters(registry, state);
        meters.registerNew();
        state.onChange(meters::registerNew);
    }

    private void registerNew()
    {
        for (final String policy : state.appealedPolicies())
        {
            if (metered.add(policy))
            {
                FunctionCounter.builder("limiter.false.rejections", state, s -> s.falseRejections(policy))
                    .description("Rejected decisions appealed as false rejections (./limiter appeal add), "
                        + "by the policy that refused them")
                    .tags("policy", policy)
                    .register(registry);
            }
        }
    }
}
