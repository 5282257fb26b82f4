package dev.limiter.client;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * The SDK's meters, for hosts that run Micrometer (an optional dependency of the SDK: only this
 * class needs it). {@code LimiterMetrics.bind(client, registry)} registers:
 * <ul>
 *   <li>{@code limiter.sdk.circuit.open}: circuits open: one per Raft group whose calls are decided
 *   locally (bar one probe at a time), from the failures that open it until a node answers again,
 *   and one for calls not routed to a group (one group, no shard map); 0 while every call tries a node;</li>
 *   <li>{@code limiter.sdk.local.decisions{policy,mode,outcome}}: local decisions by the policy
 *       (the route's) and its failure mode (OPEN, CLOSED), allowed or denied;</li>
 *   <li>{@code limiter.sdk.fast.rejections}: refusals repeated locally until a Retry-After;</li>
 *   <li>{@code limiter.sdk.degraded.seconds}: time spent with at least one circuit open;</li>
 *   <li>{@code limiter.sdk.late.deadlines}: blocking calls the caller's thread failed at their
 *   deadline because the SDK's I/O thread was late (a sign the SDK's threads are starved);</li>
 *   <li>{@code limiter.sdk.redirects}: frames a node answered NOT_LEADER (their calls were retried,
 *   on the leader it named when it named one); still in steady state;</li>
 *   <li>{@code limiter.sdk.overloaded.frames}: frames a node answered OVERLOADED (its replication
 *   log was behind; their calls were sent again after a backoff, within their deadlines);</li>
 *   <li>{@code limiter.sdk.token.lease.tokens{kind}}: tokens of SDK token leases (policies with
 *   {@code tokenLease}): leased from the cluster, used by calls, lapsed unused;</li>
 *   <li>{@code limiter.sdk.policy.version}: version of the policy set held.</li>
 * </ul>
 */
public final class LimiterMetrics
{
    private LimiterMetrics()
    {
    }

    public static void bind(final LimiterClient client, final MeterRegistry registry)
    {
        Gauge.builder("limiter.sdk.circuit.open", client, c -> c.stats().openCircuits())
            .description("Circuits open (one per Raft group whose calls are decided locally until a node answers again)").register(registry);
        FunctionCounter.builder("limiter.sdk.fast.rejections", client, c -> c.stats().fastRejections())
            .description("Calls refused locally until a Retry-After the cluster gave").register(registry);
        FunctionCounter.builder("limiter.sdk.degraded.seconds", client, c -> c.stats().degradedTime().toNanos() / 1e9)
            .description("Time spent with the circuit open").baseUnit("seconds").register(registry);
        FunctionCounter.builder("limiter.sdk.late.deadlines", client, c -> c.stats().lateDeadlines())
            .description("Blocking calls failed on the caller's thread because the SDK's I/O thread was late at their deadline")
            .register(registry);
        FunctionCounter.builder("limiter.sdk.redirects", client, c -> c.stats().redirects())
            .description("Frames a node answered NOT_LEADER; their calls were retried, on the leader it named when it named one").register(registry);
        FunctionCounter.builder("limiter.sdk.overloaded.frames", client, c -> c.stats().overloadedFrames())
            .description("Frames a node answered OVERLOADED; their calls were sent again after a backoff, within their deadlines")
            .register(registry);
        FunctionCounter.builder("limiter.sdk.token.lease.tokens", client, c -> c.stats().tokenLeaseTokensLeased())
            .description("Tokens of SDK token leases, by what became of them").tags("kind", "leased").register(registry);
        FunctionCounter.builder("limiter.sdk.token.lease.tokens", client, c -> c.stats().tokenLeaseTokensUsed())
            .description("Tokens of SDK token leases, by what became of them").tags("kind", "used").register(registry);
        FunctionCounter.builder("limiter.sdk.token.lease.tokens", client, c -> c.stats().tokenLeaseTokensLapsed())
            .description("Tokens of SDK token leases, by what became of them").tags("kind", "lapsed").register(registry);
        Gauge.builder("limiter.sdk.policy.version", client, c -> c.policies().version())
            .description("Version of the policy set this client holds (0: none yet)").register(registry);
        final LocalFallback local = client.localFallback();
        if (local != null)
        {
            local.onNewKey(key ->
            {
                final String[] parts = key.split("\\|", 3);
                FunctionCounter.builder("limiter.sdk.local.decisions", local, l -> l.count(key))
                    .description("Decisions this SDK made on its own while no node answered")
                    .tags("policy", parts[0], "mode", parts[1], "outcome", parts[2])
                    .register(registry);
            });
        }
    }
}
