package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.Verdict;

/**
 * A SHADOW policy's evaluation of an entry: it spends its own bucket (replicated like any other)
 * and is only counted, never answered (the answer is the enforced policy's). A check evaluates what
 * the shadow would answer to one token, changing nothing. Each evaluation is also compared with what
 * was enforced, per tenant and route ({@link ShadowCompareTable}): at once when the entry was answered
 * on this shard or on the event loop, else by the shard that finishes the frame last
 * ({@link #compareAcrossShards}).
 */
final class ShadowDecider
{
    private final ShardContext shard;
    private final MonotonicClock clock;
    /** Created by the first shadow evaluation: a shard that never evaluates one holds no table. */
    private volatile ShadowCompareTable compares;

    ShadowDecider(final ShardContext shard, final MonotonicClock clock)
    {
        this.shard = shard;
        this.clock = clock;
    }

    /**
     * This shard's comparisons, or null before its first shadow evaluation (written by the owner, read by any thread).
     */
    ShadowCompareTable compares()
    {
        return compares;
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
            compare(work, j, would);
            return;
        }
        final long leaseId = work.leaseId[work.shadows.entry[j]];
        if (shard.charge(work, keys.keyOffset[j], keys.keyLength[j], keys.keyHash[j], shadow, limit, (int)cost,
            leaseId, now))
        {
            work.shadows.leased[j] = true;
            work.shadows.leaseId[j] = leaseId;
            work.shadows.leaseCheck[j] = LeaseChecks.fold(LeaseChecks.SEED, shadow);
            work.anyLeased = true;
        }
        count(shadow, verdict.allowed());
        compare(work, j, verdict.allowed());
    }

    /**
     * Compares the frame's shadows that were evaluated on another shard than their entry: called by the
     * shard that finished deciding the frame last, which sees what every other shard wrote.
     */
    void compareAcrossShards(final FrameWork work)
    {
        final long nowMillis = clock.wallNanos() / 1_000_000L;
        for (int j = 0; j < work.shadowCount; j++)
        {
            final int entryShard = work.entries.shard[work.shadows.entry[j]];
            if (work.shadows.evaluated[j] && entryShard >= 0 && entryShard != work.shadows.shard[j])
            {
                record(work, j, work.shadows.wouldAllow[j], nowMillis);
            }
        }
    }

    private void compare(final FrameWork work, final int j, final boolean wouldAllow)
    {
        final int entryShard = work.entries.shard[work.shadows.entry[j]];
        if (entryShard == shard.id || entryShard == FrameWork.NO_LIMIT)
        {
            record(work, j, wouldAllow, clock.wallNanos() / 1_000_000L);
        }
        else
        {
            work.shadows.wouldAllow[j] = wouldAllow;
            work.shadows.evaluated[j] = true;
        }
    }

    /** Counts shadow {@code j} against its entry's answer, which is written by now. */
    private void record(final FrameWork work, final int j, final boolean wouldAllow, final long nowMillis)
    {
        if (compares == null)
        {
            compares = new ShadowCompareTable();
        }
        final int entry = work.shadows.entry[j];
        final CompiledPolicy enforced = work.entries.policy[entry];
        final CompiledPolicy shadow = work.shadows.policy[j];
        final boolean enforcedAllowed = work.entries.shard[entry] == FrameWork.NO_LIMIT ||
            ResultCodec.allowed(work.response, ResultCodec.recordOffset(work.frameStart, entry));
        compares.record(shadow.ordinal(), shadow.version(), enforced.id().equals(shadow.id()) ? enforced.version() : 0,
            work.keys, work.shadows.compareOffset[j], work.shadows.compareLength[j], work.shadows.compareHash[j],
            enforcedAllowed, wouldAllow, nowMillis);
    }

    private void count(final CompiledPolicy shadow, final boolean allowed)
    {
        shard.counters.increment(shadow.ordinal(), allowed ? PolicyCounters.SHADOW_ALLOWED
            : PolicyCounters.SHADOW_DENIED);
    }
}
