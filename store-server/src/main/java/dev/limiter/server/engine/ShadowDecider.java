package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.Verdict;

/**
 * A SHADOW policy's evaluation of an entry: it spends its own bucket (replicated like any other)
 * and is only counted, never answered (the answer is the enforced policy's). A check evaluates what
 * the shadow would answer to one token, changing nothing.
 */
final class ShadowDecider
{
    private final ShardContext shard;

    ShadowDecider(final ShardContext shard)
    {
        this.shard = shard;
    }

    /** Evaluates shadow {@code j} of the frame at {@code now}. */
    void evaluate(final FrameWork work, final int j, final long now)
    {
        final KeyColumns keys = work.shadows;
        final CompiledPolicy shadow = keys.policy[j];
        final Verdict verdict = shard.verdict;
        final boolean regional = shard.regional(shadow);
        final Limit limit = regional ? shard.regional.limit(shadow, shard.id, shard.shardCount) : shard.limit(shadow);
        final long cost = regional ? RegionalShares.cost(keys.cost[j], shard.regional.unitsPerToken(shadow),
            limit) : keys.cost[j];
        if (cost < 0)
        {
            return; // this region's share of the shadowed limit cannot hold the request: nothing to evaluate
        }
        if (cost == 0)
        {
            final long one = regional ? RegionalShares.cost(1, shard.regional.unitsPerToken(shadow), limit) : 1;
            final boolean would = one >= 0 && shard.table.peek(work.keys, keys.keyOffset[j], keys.keyLength[j],
                keys.keyHash[j], limit, one, 0, now, verdict);
            count(shadow, would);
            return;
        }
        final long leaseId = work.leaseId[work.shadowEntry[j]];
        if (shard.charge(work, keys.keyOffset[j], keys.keyLength[j], keys.keyHash[j], shadow, limit, (int)cost,
            leaseId, now))
        {
            work.shadowLeased[j] = true;
            work.shadowLeaseId[j] = leaseId;
            work.shadowLeaseCheck[j] = FrameWork.leaseCheck(FrameWork.LEASE_CHECK_SEED, shadow);
            work.anyLeased = true;
        }
        count(shadow, verdict.allowed());
    }

    private void count(final CompiledPolicy shadow, final boolean allowed)
    {
        shard.counters.increment(shadow.ordinal(), allowed ? PolicyCounters.SHADOW_ALLOWED
            : PolicyCounters.SHADOW_DENIED);
    }
}
