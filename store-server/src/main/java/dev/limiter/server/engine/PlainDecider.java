package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.Verdict;

/**
 * An entry decided by its own policy alone (no stacked scope, no extra limit, no region): charges
 * its key, answers with the verdict, takes its lease when a concurrency limit grants one, and
 * marks the key hot when SDKs should take token blocks of it.
 */
final class PlainDecider
{
    private final ShardContext shard;

    PlainDecider(final ShardContext shard)
    {
        this.shard = shard;
    }

    /** Decides entry {@code i} at {@code now}; returns whether its answer must wait for the commit (STRICT). */
    boolean decide(final FrameWork work, final int i, final long now)
    {
        final CompiledPolicy policy = work.entries.policy[i];
        final Limit limit = shard.limit(policy);
        final Verdict verdict = shard.verdict;
        final boolean leaseTaken = shard.charge(work, work.entries.keyOffset[i], work.entries.keyLength[i],
            work.entries.keyHash[i], policy, limit, work.entries.cost[i], work.leaseId[i], now);
        shard.hotKeys.decided(work.keys, work.entries.keyOffset[i], work.entries.keyLength[i],
            work.entries.keyHash[i], work.entries.cost[i], now);
        final int record = ResultCodec.recordOffset(work.frameStart, i);
        ResultCodec.putRecord(work.response, record, verdict.allowed(), verdict.reason(), policy.ordinal(),
            verdict.remainingTokens(), policy.limit().burstTokens(), verdict.retryAfterNanos(),
            verdict.resetAfterNanos(), policy.version(), policy.windowSeconds());
        if (leaseTaken)
        {
            ShardContext.leased(work, i, LeaseChecks.fold(LeaseChecks.SEED, policy));
        }
        final long hotRate = policy.tokenLeaseHotRate();
        if (hotRate != 0 && shard.hotKeys.tokensPerSecond(work.entries.keyHash[i],
            work.entries.keyLength[i]) >= hotRate)
        {
            // SDKs take token blocks of this key while it stays this hot (tokenLease.hotRate).
            ResultCodec.markHotKey(work.response, record);
        }
        shard.answered(policy.ordinal(), verdict.allowed());
        shard.countOverage(policy.ordinal(), verdict.reason(), -1);
        shard.shareDecided(policy, verdict.remainingTokens());
        return shard.log != null && policy.strict();
    }
}
