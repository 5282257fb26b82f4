package dev.limiter.server.control;

import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.server.control.PolicyState.Outcome;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * This region's shares (millionths) of regional policies, by policy id, as the region's leader last
 * moved them through the log (REGION_SHARES commands). Not a change of the policy set and not
 * audited: it happens a few times a second. Changed only by applied commands, under
 * {@link PolicyState}'s lock; read without a lock by the region exchange and the shards, since the
 * whole value is replaced on every command.
 */
final class RegionShareBook
{
    private final LongSupplier setVersion;
    private volatile RegionShares shares = RegionShares.getDefaultInstance();

    /** @param setVersion the policy set's version, which every reply names */
    RegionShareBook(final LongSupplier setVersion)
    {
        this.setVersion = setVersion;
    }

    /** REGION_SHARES: merges the shares it names into those held; refused whole when one is out of range. */
    Outcome apply(final PolicyCommand command)
    {
        final Map<String, Integer> next = new HashMap<>(shares.getSharePpmMap());
        for (final Map.Entry<String, Integer> share : command.getRegionShares().getSharePpmMap().entrySet())
        {
            if (share.getValue() < 0 || share.getValue() > 1_000_000)
            {
                return Outcome.invalid("a region's share is 0 to 1,000,000 millionths, was " + share.getValue() +
                    " for " + share.getKey(), List.of());
            }
            next.put(share.getKey(), share.getValue());
        }
        shares = RegionShares.newBuilder().putAllSharePpm(next).setGeneration(shares.getGeneration() + 1).build();
        return Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion.getAsLong()).build());
    }

    /** The shares by policy id, as last committed; empty before any (any thread). */
    Map<String, Integer> shares()
    {
        return shares.getSharePpmMap();
    }

    /** The shares with their generation: how many REGION_SHARES commands were applied (any thread). */
    RegionShares committed()
    {
        return shares;
    }

    /** Written only once there is something: a snapshot without shares keeps its bytes. */
    void writeTo(final PolicyStateSnapshot.Builder snapshot)
    {
        if (shares.getGeneration() > 0 || shares.getSharePpmCount() > 0)
        {
            snapshot.setRegionShares(shares);
        }
    }

    void restoreFrom(final PolicyStateSnapshot snapshot)
    {
        shares = snapshot.getRegionShares();
    }
}
