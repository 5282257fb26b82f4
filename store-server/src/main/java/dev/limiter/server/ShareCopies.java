package dev.limiter.server;

import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.server.cluster.ReplicationGroups;
import dev.limiter.server.region.RegionGroups;

import java.util.concurrent.CompletableFuture;

/**
 * The region exchange's view of a node's Raft groups (several of them): every group other than the
 * control group holds a copy of the region's shares in its own log (docs/regions.md).
 */
final class ShareCopies implements RegionGroups
{
    private final ReplicationGroups groups;

    ShareCopies(final ReplicationGroups groups)
    {
        this.groups = groups;
    }

    @Override
    public int count()
    {
        return groups.all().size();
    }

    @Override
    public int groupOf(final int shard)
    {
        return ReplicationGroups.groupOf(shard, count());
    }

    @Override
    public RegionShares copy(final int group)
    {
        return groups.all().get(group).buckets().regionShares();
    }

    @Override
    public boolean decides(final int group)
    {
        return groups.all().get(group).canDecide();
    }

    @Override
    public CompletableFuture<?> propose(final int group, final RegionShares shares)
    {
        return groups.all().get(group).copyRegionShares(shares);
    }

    @Override
    public void onCopy(final Runnable listener)
    {
        groups.all().stream().skip(1).forEach(group -> group.buckets().onRegionShares(listener));
    }
}
