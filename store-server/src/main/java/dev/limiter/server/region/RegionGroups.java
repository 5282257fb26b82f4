package dev.limiter.server.region;

import dev.limiter.protocol.policy.RegionShares;

import java.util.concurrent.CompletableFuture;

/**
 * This node's Raft groups as the region exchange sees them (docs/regions.md, several Raft groups).
 * The control group (group 0) holds the region's shares; every other group holds a copy of them in
 * its own log, made by its leader from what that node applied of the control group, and its shards
 * decide with no more than the copy says. So the shares any node decides with are bound by what the
 * groups' logs hold, and the region reports what the oldest copy may still allow. Implemented over
 * the cluster by the server.
 */
public interface RegionGroups
{
    /** One group or none (a single node): there are no copies. */
    RegionGroups SINGLE = new RegionGroups()
    {
        @Override
        public int count()
        {
            return 1;
        }

        @Override
        public int groupOf(final int shard)
        {
            return 0;
        }

        @Override
        public RegionShares copy(final int group)
        {
            throw new IllegalArgumentException("a single group holds no copy of the shares");
        }

        @Override
        public boolean decides(final int group)
        {
            return false;
        }

        @Override
        public CompletableFuture<?> propose(final int group, final RegionShares shares)
        {
            return CompletableFuture.failedFuture(new IllegalArgumentException("a single group holds no copy of the shares"));
        }

        @Override
        public void onCopy(final Runnable listener)
        {
            // no copies, nothing to tell
        }
    };

    /** Groups, the control group included (1: the control group alone, or a single node). */
    int count();

    /** The group shard {@code shard} belongs to. */
    int groupOf(int shard);

    /** Group {@code group}'s copy (1 to count - 1) as this node has applied it: generation 0 and no shares before any. */
    RegionShares copy(int group);

    /** Whether this node leads group {@code group} (1 to count - 1) and may decide for it now. */
    boolean decides(int group);

    /** Proposes {@code shares} as group {@code group}'s copy; completes once committed and applied here, exceptionally if not. */
    CompletableFuture<?> propose(int group, RegionShares shares);

    /** {@code listener} runs (on the group's apply thread) whenever a group's copy changed on this node. */
    void onCopy(Runnable listener);
}
