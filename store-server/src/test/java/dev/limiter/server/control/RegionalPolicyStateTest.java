package dev.limiter.server.control;

import dev.limiter.protocol.Limit;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Regional;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.protocol.policy.TokenLease;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Regional policies in the replicated policy state: how a region's node counts them, and its shares through the log. */
class RegionalPolicyStateTest
{
    private static final long T0 = 1_700_000_000_000L;

    private static Policy regional(final long rate)
    {
        return Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/orders")).setRate(rate).setBurst(rate)
            .setOwner("t").setRegional(Regional.getDefaultInstance()).build();
    }

    private static PolicyState bootstrapped(final boolean regions)
    {
        final PolicyState state = new PolicyState(1, regions);
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("n1", T0)
            .setBootstrap(PolicySet.newBuilder().setVersion(1).addPolicies(regional(100))
                .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(10).setOwner("t"))).build()).status());
        return state;
    }

    @Test
    void aNodeOfARegionCountsARegionalLimitInThousandthsOfATokenAndANodeWithoutRegionsAsItIs()
    {
        final Limit inRegion = bootstrapped(true).rateIfKnown(0, 1, 0, 0);
        final Limit whole = bootstrapped(false).rateIfKnown(0, 1, 0, 0);
        assertNotNull(inRegion);
        assertEquals(100_000, inRegion.burstTokens());
        assertEquals(100, whole.burstTokens());
    }

    @Test
    void sharesGoThroughTheLogSurviveASnapshotAndTellNoListener()
    {
        final PolicyState state = bootstrapped(true);
        final int[] told = {0};
        state.onChange(() -> told[0]++);
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("region:eu", T0 + 1)
            .setRegionShares(RegionShares.newBuilder().putSharePpm("orders", 730_000)).build()).status());
        assertEquals(Map.of("orders", 730_000), state.regionShares());
        assertEquals(0, told[0], "not a change of the policy set: nothing republished");
        final long setVersion = state.setVersion();

        final PolicyState restored = new PolicyState(1, true);
        restored.restore(state.snapshot());
        assertEquals(Map.of("orders", 730_000), restored.regionShares());
        assertEquals(setVersion, restored.setVersion());

        // A share outside 0..1 is refused, and nothing changes.
        final PolicyState.Outcome bad = state.apply(PolicyState.command("region:eu", T0 + 2)
            .setRegionShares(RegionShares.newBuilder().putSharePpm("orders", 1_000_001)).build());
        assertEquals(PolicyState.Status.INVALID, bad.status());
        assertTrue(bad.error().getError().contains("0 to 1,000,000"), bad.error().toString());
        assertEquals(Map.of("orders", 730_000), state.regionShares());
    }

    @Test
    void eachSharesCommandAppliedCountsOneGenerationAndASnapshotKeepsTheCount()
    {
        final PolicyState state = bootstrapped(true);
        assertEquals(0, state.committedShares().getGeneration(), "no shares committed yet");
        for (int i = 1; i <= 3; i++)
        {
            state.apply(PolicyState.command("region:eu", T0 + i).setRegionShares(RegionShares.newBuilder().putSharePpm("orders", 100_000 * i))
                .build());
        }
        state.apply(PolicyState.command("region:eu", T0 + 4).setRegionShares(RegionShares.newBuilder().putSharePpm("orders", 1_000_001))
            .build()); // refused: not counted
        assertEquals(RegionShares.newBuilder().setGeneration(3).putSharePpm("orders", 300_000).build(), state.committedShares());

        final PolicyState restored = new PolicyState(1, true);
        restored.restore(state.snapshot());
        assertEquals(state.committedShares(), restored.committedShares());
        restored.apply(PolicyState.command("region:eu", T0 + 5).setRegionShares(RegionShares.newBuilder().putSharePpm("orders", 50_000))
            .build());
        assertEquals(4, restored.committedShares().getGeneration());
    }

    @Test
    void aRegionalPolicyWithWhatARegionCannotSplitIsRefusedSayingWhat()
    {
        assertProblem(regional(100).toBuilder().clearRate().setMaxConcurrent(10).build(), "a concurrency limit cannot be split among regions");
        assertProblem(regional(100).toBuilder().setStacked(true).build(), "no extra limits, not stacked, no reserve");
        assertProblem(regional(100).toBuilder().setTokenLease(TokenLease.newBuilder().setHotRate(10)).build(),
            "SDK token leases are not offered on regional policies");
        assertProblem(regional(100).toBuilder().setRegional(Regional.newBuilder().setMinSharePercent(60)).build(),
            "regional.minSharePercent: 1 to 50");
        assertProblem(regional(Long.MAX_VALUE / 10), "do not fit");
        assertNull(problem(regional(100)));
    }

    private static void assertProblem(final Policy policy, final String expected)
    {
        final String problem = problem(policy);
        assertNotNull(problem, "refused: " + policy);
        assertTrue(problem.contains(expected), problem);
    }

    private static String problem(final Policy policy)
    {
        try
        {
            PolicySetIndex.compile(PolicySet.newBuilder().setVersion(1).addPolicies(policy)
                .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(10).setOwner("t")).build());
            return null;
        }
        catch (final dev.limiter.protocol.PolicyValidationException e)
        {
            return String.join("; ", e.errors());
        }
    }
}
