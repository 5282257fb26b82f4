package dev.limiter.server.region;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.RegionalShares;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The region's shares as this node holds them: the committed ones (the control group's log, as
 * applied here), the ones proposed and not yet committed, and each other group's copy
 * ({@link RegionGroups}). From them it answers the two questions the exchange is about: what each
 * group's shards decide with ({@link #decidingShare}, published to the shards as
 * {@link RegionalShares}) and what the other regions are told ({@link #reportedShare}). A lower
 * share counts for deciding from its proposal and a higher one for reporting from its proposal, so
 * what a region reports is never below what any of its shards decides with.
 */
final class NodeShares
{
    private final PolicyState state;
    private final RegionGroups groups;
    private final ShareAllocator allocator;
    /**
     * Whether committed shares outlive a restart (a cluster's log); a lone node's do not, so it starts from the floor.
     */
    private final boolean persistent;
    private final ShareHistory history;
    /** What each group's shards read, by group. */
    private final GroupView[] views;
    /**
     * Shares proposed and not yet committed, by policy id: a lower one is decided with at once, a higher one reported
     * at once.
     */
    private final Map<String, Integer> pending = new ConcurrentHashMap<>();

    /**
     * @param persistent whether the region's committed shares survive a restart (see {@link RegionExchange})
     */
    NodeShares(final PolicyState state, final RegionGroups groups, final ShareAllocator allocator,
        final boolean persistent)
    {
        this.state = state;
        this.groups = groups;
        this.allocator = allocator;
        this.persistent = persistent;
        this.history = new ShareHistory(allocator.initialShare());
        this.views = new GroupView[groups.count()];
        for (int g = 0; g < views.length; g++)
        {
            views[g] = new GroupView(g);
        }
    }

    /** The regional policies in force (shadows decide with the whole, so they have no share). */
    List<CompiledPolicy> regionalPolicies()
    {
        return state.index().policies().stream().filter(p -> p.regional() && !p.shadow()).toList();
    }

    /** What the shards of shard {@code shard}'s group read. */
    RegionalShares forShard(final int shard)
    {
        return views[groups.groupOf(shard)];
    }

    /** Records the committed shares as applied now (at start, and after every REGION_SHARES command or restore). */
    void recordCommitted()
    {
        history.record(state.committedShares());
    }

    /** One group's shares as its shards decide with them. */
    private final class GroupView implements RegionalShares
    {
        private final int group;
        /** What one token costs now, by policy ordinal (0: not a regional policy in force). */
        private volatile long[] unitsByOrdinal = new long[0];

        GroupView(final int group)
        {
            this.group = group;
        }

        @Override
        public long unitsPerToken(final CompiledPolicy policy)
        {
            final long[] byOrdinal = unitsByOrdinal;
            final int ordinal = policy.ordinal();
            final long units = ordinal < byOrdinal.length ? byOrdinal[ordinal] : 0;
            // Not cached (a shadow, or just put): from the shares themselves.
            return units != 0 ? units : RegionalShares.unitsPerToken(decidingShare(policy, group));
        }

        @Override
        public Limit limit(final CompiledPolicy policy, final int shard, final int shards)
        {
            return state.rateIfKnown(policy.ordinal(), policy.version(), 0, shard);
        }
    }

    /**
     * Recomputes what the shards read: after every change of the committed shares, of the proposals,
     * of a group's copy or of the policy set, so a lower share counts from its proposal and nothing
     * reads a stale one.
     */
    synchronized void publish()
    {
        final List<CompiledPolicy> regional = regionalPolicies();
        int size = 0;
        for (final CompiledPolicy policy : regional)
        {
            size = Math.max(size, policy.ordinal() + 1);
        }
        for (final GroupView view : views)
        {
            final long[] byOrdinal = new long[size];
            for (final CompiledPolicy policy : regional)
            {
                byOrdinal[policy.ordinal()] = RegionalShares.unitsPerToken(decidingShare(policy, view.group));
            }
            view.unitsByOrdinal = byOrdinal;
        }
    }

    // ---------------------------------------------------------------- proposals

    /** Whether a share of policy {@code id} is proposed and not yet settled. */
    boolean proposing(final String id)
    {
        return pending.containsKey(id);
    }

    /** Proposals the log has committed are settled: only then is the committed share what counts. */
    void settle()
    {
        final Map<String, Integer> committedNow = state.regionShares();
        pending.entrySet().removeIf(p -> p.getValue().equals(committedNow.get(p.getKey())));
    }

    /** This node no longer leads the control group: its proposals are not its to follow any more. */
    void dropProposals()
    {
        pending.clear();
        publish();
    }

    /** Shares being proposed (by policy id): a lower one counts from now on. */
    void propose(final Map<String, Integer> proposals)
    {
        pending.putAll(proposals);
        publish();
    }

    /**
     * Proposals that did not reach the log: the committed shares stand. Only these proposals (a
     * policy's entry that is another proposal by now stays).
     */
    void withdraw(final Map<String, Integer> proposals)
    {
        proposals.forEach(pending::remove);
        publish();
    }

    // ---------------------------------------------------------------- the shares

    /**
     * The share group {@code group}'s shards decide with: this node's (a lower one proposed counts from
     * its proposal), and in any other group than the control group no more than the group's copy.
     */
    int decidingShare(final CompiledPolicy policy, final int group)
    {
        final int own = sharePpm(policy);
        if (group == 0)
        {
            return own;
        }
        final Integer copied = groups.copy(group).getSharePpmMap().get(policy.id());
        return Math.min(own, copied != null ? copied : unset(policy));
    }

    /** The share decided with: a lower one proposed counts from its proposal. */
    int sharePpm(final CompiledPolicy policy)
    {
        // The proposal first: a lowering committed and cleared between the two reads is then still seen in one of them.
        final Integer proposed = pending.get(policy.id());
        final int committed = committed(policy);
        return proposed == null ? committed : Math.min(committed, proposed);
    }

    /** The share the control group's log holds, as applied here. */
    int committed(final CompiledPolicy policy)
    {
        final Integer share = state.regionShares().get(policy.id());
        return share != null ? share : unset(policy);
    }

    /** The share of a policy no REGION_SHARES command has named yet. */
    private int unset(final CompiledPolicy policy)
    {
        return persistent ? allocator.initialShare() : floor(policy);
    }

    /** The least share the region keeps of {@code policy}. */
    int floor(final CompiledPolicy policy)
    {
        return allocator.floor(policy.source().getRegional().getMinSharePercent());
    }

    /**
     * What the other regions are told this region may decide with: a share being raised counts from
     * its proposal, and with several groups a share a group's copy may still allow counts until every
     * group has copied what came after it.
     */
    int reportedShare(final CompiledPolicy policy)
    {
        // The copies first: a copy made after they are read only drops generations that are still counted.
        final int copied = groups.count() > 1 ? history.highestSince(oldestCopy(), policy.id()) : 0;
        // The proposal next: a raise committed and cleared between the two reads is then still seen in one of them.
        final Integer proposed = pending.get(policy.id());
        final int committed = committed(policy);
        return Math.max(copied, proposed == null ? committed : Math.max(committed, proposed));
    }

    /** The oldest generation of the shares any group other than the control group holds a copy of, as applied here. */
    private long oldestCopy()
    {
        long oldest = Long.MAX_VALUE;
        for (int g = 1; g < groups.count(); g++)
        {
            oldest = Math.min(oldest, groups.copy(g).getGeneration());
        }
        return oldest;
    }

    /**
     * The most any shard of this node decides {@code policy} with now: over the groups it leads (0 when it leads none).
     *
     * @param leadsControl whether this node leads the control group
     */
    int decidesWith(final CompiledPolicy policy, final boolean leadsControl)
    {
        int most = leadsControl ? decidingShare(policy, 0) : 0;
        for (int g = 1; g < groups.count(); g++)
        {
            if (groups.decides(g))
            {
                most = Math.max(most, decidingShare(policy, g));
            }
        }
        return most;
    }

    /** The share decided with of the regional policy {@code id} in force, or 0 when there is none. */
    int shareOf(final String id)
    {
        for (final CompiledPolicy policy : regionalPolicies())
        {
            if (policy.id().equals(id))
            {
                return sharePpm(policy);
            }
        }
        return 0;
    }
}
