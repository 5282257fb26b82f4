package dev.limiter.server.region;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.protocol.policy.Regional;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.server.control.PolicyState;

/**
 * The region tests' control state: one regional policy, {@code orders} (100 a second, a default
 * floor), beside a default policy, with REGION_SHARES commands of region {@code eu} applied as the
 * log would apply them.
 */
final class RegionalOrders
{
    /** The log time of every command these tests apply. */
    static final long T0 = 1_700_000_000_000L;

    private RegionalOrders()
    {
    }

    /** A state of a node in a region, with {@code orders} in force. */
    static PolicyState bootstrapped(final int shards)
    {
        final PolicyState state = new PolicyState(shards, true);
        bootstrap(state);
        return state;
    }

    static void bootstrap(final PolicyState state)
    {
        state.apply(PolicyState.command("n1", T0).setBootstrap(PolicySet.newBuilder().setVersion(1)
            .addPolicies(Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/orders"))
                .setRate(100).setBurst(100).setOwner("t").setRegional(Regional.getDefaultInstance()))
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(10).setOwner("t"))).build());
    }

    /** {@code orders} as the set in force compiled it. */
    static CompiledPolicy orders(final PolicyState state)
    {
        return state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow();
    }

    /** Applies a REGION_SHARES command giving region eu {@code sharePpm} of {@code orders}. */
    static void commit(final PolicyState state, final int sharePpm)
    {
        state.apply(PolicyState.command("region:eu", T0)
            .setRegionShares(RegionShares.newBuilder().putSharePpm("orders", sharePpm)).build());
    }
}
