package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.Verdict;

/**
 * An entry of a regional policy on a node in a region: charged {@link RegionalShares#cost} of the
 * limit as the region counts it, logged with that cost (a replica replays it whatever the share is
 * then), and answered in tokens (remaining and burst divided by what one token takes at this share).
 */
final class RegionalDecider
{
    private final ShardContext shard;

    RegionalDecider(final ShardContext shard)
    {
        this.shard = shard;
    }

    /** Decides entry {@code i} at {@code now}; returns whether its answer must wait for the commit (STRICT). */
    boolean decide(final FrameWork work, final int i, final long now)
    {
        final CompiledPolicy policy = work.entries.policy[i];
        final RegionalShares regional = shard.regional;
        final int cost = work.entries.cost[i];
        final long perToken = regional.unitsPerToken(policy);
        final Limit limit = regional.limit(policy, shard.id, shard.shardCount);
        final long units = RegionalShares.cost(cost, perToken, limit);
        shard.hotKeys.decided(work.keys, work.entries.keyOffset[i], work.entries.keyLength[i],
            work.entries.keyHash[i], cost, now);
        if (units < 0)
        {
            // This region's share cannot hold the request now: refused here, nothing charged or logged.
            ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), false,
                ReasonCode.RATE_LIMITED, policy.ordinal(), 0, 0, ShardContext.REGION_SHARE_RETRY_NANOS,
                ShardContext.REGION_SHARE_RETRY_NANOS, policy.version(), policy.windowSeconds());
            shard.answered(policy.ordinal(), false);
            return false;
        }
        final Verdict verdict = shard.verdict;
        shard.table.acquire(work.keys, work.entries.keyOffset[i], work.entries.keyLength[i], work.entries.keyHash[i],
            policy.ordinal(), limit, units, now, verdict);
        boolean strict = false;
        if (shard.log != null)
        {
            shard.log.append(work.keys, work.entries.keyOffset[i], work.entries.keyLength[i], policy.ordinal(),
                (int)units, now);
            strict = policy.strict();
        }
        ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), verdict.allowed(),
            verdict.reason(), policy.ordinal(), verdict.remainingTokens() / perToken, limit.burstTokens() / perToken,
            verdict.retryAfterNanos(), verdict.resetAfterNanos(), policy.version(), policy.windowSeconds());
        shard.answered(policy.ordinal(), verdict.allowed());
        shard.countOverage(policy.ordinal(), verdict.reason(), -1);
        shard.shareDecided(policy, verdict.remainingTokens());
        return strict;
    }
}
