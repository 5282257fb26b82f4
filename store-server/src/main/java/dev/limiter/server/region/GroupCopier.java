package dev.limiter.server.region;

import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.server.control.PolicyState;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Copies the region's shares, as this node applied them, into the log of every other Raft group it
 * leads ({@link RegionGroups}): a group's shards decide with no more than its copy allows, so a
 * lowering binds a group only once its copy is in the group's log. One proposal in flight per group;
 * one that fails is made again at the next call.
 */
final class GroupCopier
{
    private final PolicyState state;
    private final RegionGroups groups;
    /** Whether this node has a copy in flight to the group, by group. */
    private final AtomicBoolean[] copying;

    GroupCopier(final PolicyState state, final RegionGroups groups)
    {
        this.state = state;
        this.groups = groups;
        this.copying = new AtomicBoolean[groups.count()];
        for (int g = 0; g < copying.length; g++)
        {
            copying[g] = new AtomicBoolean();
        }
    }

    /**
     * Every group this node leads, other than the control group, whose copy is older than the shares
     * this node applied gets them as its copy.
     */
    void copy()
    {
        final RegionShares applied = state.committedShares();
        for (int g = 1; g < groups.count(); g++)
        {
            if (groups.copy(g).getGeneration() >= applied.getGeneration() || !groups.decides(g) ||
                !copying[g].compareAndSet(false, true))
            {
                continue;
            }
            final int group = g;
            CompletableFuture<?> copied;
            try
            {
                copied = groups.propose(g, applied);
            }
            catch (final RuntimeException e)
            {
                copied = CompletableFuture.failedFuture(e);
            }
            copied.whenComplete((done, failure) -> copying[group].set(false)); // failed: the next call tries again
        }
    }
}
