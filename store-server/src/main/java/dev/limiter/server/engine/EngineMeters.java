package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.server.control.PolicyState;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntSupplier;

/**
 * The meters read from the engine: per shard (buckets, table memory, evictions, queue depth, hot
 * keys) and per policy (decisions by outcome, shadow evaluations, version, rollout), registered
 * on the node's registry. Gauges read values the shards publish, never a shard's table memory.
 */
public final class EngineMeters
{
    private final MeterRegistry registry;

    private EngineMeters(final MeterRegistry registry)
    {
        this.registry = registry;
    }

    /**
     * Registers the shards' and the policies' meters (and those of every policy added later),
     * and the open-connections gauge.
     */
    public static void bind(final MeterRegistry registry, final PolicyState policies, final List<Shard> shards,
        final IntSupplier openConnections)
    {
        final EngineMeters meters = new EngineMeters(registry);
        meters.registerPolicyMeters(policies, shards);
        policies.onChange(() -> meters.registerPolicyMeters(policies, shards));
        policies.onChange(() -> meters.registerExemptionMeters(policies));
        Gauge.builder("limiter.exemptions.active", policies, p -> p.exemptions().size())
            .description("Exemptions in force").register(registry);
        for (final Shard shard : shards)
        {
            final String id = Integer.toString(shard.id());
            Gauge.builder("limiter.buckets", shard, s -> s.table().publishedSize()).tag("shard", id)
                .description("Buckets held (full buckets are not stored)").register(registry);
            Gauge.builder("limiter.buckets.max", shard, s -> s.table().maxBuckets()).tag("shard", id).register(registry);
            Gauge.builder("limiter.table.reserved.bytes", shard, s -> s.table().publishedReservedBytes()).tag("shard", id)
                .baseUnit("bytes").register(registry);
            FunctionCounter.builder("limiter.buckets.evicted", shard, s -> s.table().publishedEvictions()).tag("shard", id).register(registry);
            FunctionCounter.builder("limiter.store.full", shard, s -> s.table().publishedStoreFullRejections()).tag("shard", id)
                .description("Requests denied because no bucket could be stored").register(registry);
            Gauge.builder("limiter.shard.queue.depth", shard, Shard::queueDepth).tag("shard", id).register(registry);
            Gauge.builder("limiter.hot.key.share", shard, s -> s.hotKeys().topShare()).tag("shard", id)
                .description("Share of this shard's recent decisions that went to its busiest key (GET /v1/hot-keys names it)")
                .register(registry);
        }
        Gauge.builder("limiter.connections.open", openConnections, s -> s.getAsInt()).strongReference(true).register(registry);
        Gauge.builder("limiter.policies", policies, p -> p.index().size())
            .description("Policies in force, the default included").register(registry);
        Gauge.builder("limiter.policy.set.version", policies, PolicyState::setVersion)
            .description("Version of the policy set in force (every change adds one)").register(registry);
    }

    private final Set<String> meteredExemptions = ConcurrentHashMap.newKeySet();

    private void registerExemptionMeters(final PolicyState policies)
    {
        for (final Exemption exemption : policies.exemptions())
        {
            final String id = exemption.getId();
            if (meteredExemptions.add(id))
            {
                FunctionCounter.builder("limiter.exemption.bypasses", policies, p -> p.bypassesHere(id))
                    .description("Decisions an exemption bypassed on this node (answered EXEMPT, no tokens spent)")
                    .tags("exemption", id)
                    .register(registry);
            }
        }
    }

    private final Set<String> meteredPolicies = ConcurrentHashMap.newKeySet();

    /** Meters for every policy id not yet metered (ids keep their ordinal, so a meter stays valid across versions). */
    private void registerPolicyMeters(final PolicyState policies, final List<Shard> shards)
    {
        for (final CompiledPolicy policy : policies.index().policies())
        {
            final String id = policy.id();
            final int ordinal = policy.ordinal();
            if ((policy.shadow() || policy.rolloutShadowsOthers()) && meteredPolicies.add(id + "/shadow"))
            {
                // Shadow evaluations of the id: of its SHADOW version and of a rollout for the tenants it leaves out.
                FunctionCounter.builder("limiter.shadow.decisions", shards,
                        s -> Arrays.stream(policies.ordinalsOf(id)).mapToLong(o -> s.stream().mapToLong(x -> x.shadowAllowed(o)).sum()).sum())
                    .description("What shadow evaluations would have decided (they never deny)")
                    .tags("policy", id, "outcome", "would_allow")
                    .register(registry);
                FunctionCounter.builder("limiter.shadow.decisions", shards,
                        s -> Arrays.stream(policies.ordinalsOf(id)).mapToLong(o -> s.stream().mapToLong(x -> x.shadowDenied(o)).sum()).sum())
                    .description("What shadow evaluations would have decided (they never deny)")
                    .tags("policy", id, "outcome", "would_deny")
                    .register(registry);
            }
            if (policy.shadow())
            {
                continue;
            }
            if (!meteredPolicies.add(id))
            {
                continue;
            }
            FunctionCounter.builder("limiter.decisions", shards, s -> s.stream().mapToLong(x -> x.allowed(ordinal)).sum())
                .description("Decisions by policy and outcome")
                .tags("policy", id, "outcome", "allowed")
                .register(registry);
            FunctionCounter.builder("limiter.decisions", shards, s -> s.stream().mapToLong(x -> x.denied(ordinal)).sum())
                .description("Decisions by policy and outcome")
                .tags("policy", id, "outcome", "denied")
                .register(registry);
            FunctionCounter.builder("limiter.soft.overage", shards, s -> s.stream().mapToLong(x -> x.overage(ordinal)).sum())
                .description("Decisions allowed beyond the policy's limit within its soft overage (also counted as allowed)")
                .tags("policy", id)
                .register(registry);
            FunctionCounter.builder("limiter.lease.releases", shards, s -> s.stream().mapToLong(x -> x.released(ordinal)).sum())
                .description("Held leases of a concurrency limit given back; grants minus releases are the leases held or expired")
                .tags("policy", id)
                .register(registry);
            FunctionCounter.builder("limiter.lease.releases.refused", shards, s -> s.stream().mapToLong(x -> x.releasesOfUnknownLeases(ordinal)).sum())
                .description("Releases that named a lease its key does not hold (a forged id, another key's, one given back already): " +
                    "nothing freed")
                .tags("policy", id, "reason", "unknown")
                .register(registry);
            FunctionCounter.builder("limiter.lease.releases.refused", shards, s -> s.stream().mapToLong(x -> x.releasesOfExpiredLeases(ordinal)).sum())
                .description("Releases that named a lease its key does not hold (a forged id, another key's, one given back already): " +
                    "nothing freed")
                .tags("policy", id, "reason", "expired")
                .register(registry);
            Gauge.builder("limiter.policy.rollout.percent", policies, p ->
                {
                    final Policy current = p.current(id);
                    return current == null || !current.hasRollout() ? 100 : current.getRollout().getPercent();
                })
                .description("Share of tenants the newest version of each policy decides for (100: no rollout in progress)")
                .tags("policy", id)
                .register(registry);
            Gauge.builder("limiter.policy.version", policies, p ->
                {
                    final Policy current = p.current(id);
                    return current == null ? 0 : current.getVersion();
                })
                .description("Version in force of each policy (0: deleted)")
                .tags("policy", id)
                .register(registry);
        }
    }
}
