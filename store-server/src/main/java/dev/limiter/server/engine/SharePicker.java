package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.ShardMap;

import java.util.List;

/**
 * Picks which shard's share of a policy split across shards ({@link CompiledPolicy#routedToAnyShare})
 * decides each of its requests, and remembers what the current frame already sends each share. One
 * per {@link FrameRouter}, used only on its event loop.
 */
final class SharePicker
{
    /** Where the next request of a policy split across shards starts looking for a share (this loop's round robin). */
    private int nextShare;
    /** Cost this frame sends to each shard's share of a split policy (cleared per frame: {@link #plannedShards}). */
    private final long[] plannedCost = new long[ShardMap.MAX_SHARDS];
    private long plannedShards;
    /** The shard this router's event loop owns (decided inline, no hand-off): -1 none, -2 not looked up yet. */
    private int homeShard = -2;

    /** A new frame: nothing is on its way to any share yet. */
    void newFrame()
    {
        while (plannedShards != 0)
        {
            plannedCost[Long.numberOfTrailingZeros(plannedShards)] = 0;
            plannedShards &= plannedShards - 1;
        }
    }

    /**
     * The shard whose share of a split policy's budget ({@link CompiledPolicy#routedToAnyShare})
     * decides the next request of {@code cost}: the shard this event loop owns while this node
     * leads it and its share has the tokens (decided inline: a hot key costs no hand-off between
     * threads), else the next in a round robin over the led shards whose shares have them, else
     * (every led share short) the round robin's next led shard, which may refuse. What a share has
     * is what it held after its last decision, less what this frame already sends it. A node that
     * leads none names the key's own shard, whose NOT_LEADER answer points at a leader.
     */
    int pick(final List<Shard> shards, final int ordinal, final long keyHash, final int cost)
    {
        final int count = shards.size();
        if (homeShard == -2)
        {
            homeShard = -1;
            for (int s = 0; s < count; s++)
            {
                if (shards.get(s).ownedByCallingThread())
                {
                    homeShard = s;
                }
            }
        }
        if (homeShard >= 0 && shards.get(homeShard).leads() && fits(shards.get(homeShard), homeShard, ordinal, cost))
        {
            return plan(homeShard, cost);
        }
        final int start = nextShare >= count ? 0 : nextShare;
        int firstLed = -1;
        for (int k = 0; k < count; k++)
        {
            final int s = start + k < count ? start + k : start + k - count;
            final Shard shard = shards.get(s);
            if (!shard.leads())
            {
                continue;
            }
            if (firstLed < 0)
            {
                firstLed = s;
            }
            if (fits(shard, s, ordinal, cost))
            {
                nextShare = s + 1;
                return plan(s, cost);
            }
        }
        if (firstLed >= 0)
        {
            nextShare = firstLed + 1;
            return plan(firstLed, cost);
        }
        return ShardMap.shardOf(keyHash, count);
    }

    private boolean fits(final Shard shard, final int s, final int ordinal, final long cost)
    {
        final long tokens = shard.splitShareTokens(ordinal);
        return tokens == Long.MAX_VALUE || tokens - plannedCost[s] >= cost;
    }

    /** Counts {@code cost} as on its way to shard {@code s} in this frame. */
    private int plan(final int s, final long cost)
    {
        plannedCost[s] += cost;
        plannedShards |= 1L << s;
        return s;
    }
}
