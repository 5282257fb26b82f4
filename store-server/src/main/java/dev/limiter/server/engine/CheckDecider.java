package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.Verdict;

/**
 * A check (cost 0): whether one token would be granted now by the entry's policy and every part it
 * would be charged against (stacked budgets, extra limits; a region's share). Nothing is charged,
 * stored or logged, and no lease is taken. The record names the first scope that refuses, else the
 * one with the fewest tokens, with the whole tokens it has now.
 */
final class CheckDecider
{
    private final ShardContext shard;

    CheckDecider(final ShardContext shard)
    {
        this.shard = shard;
    }

    void check(final FrameWork work, final int i, final long now)
    {
        final CompiledPolicy own = work.entries.policy[i];
        final Verdict verdict = shard.verdict;
        final boolean regionalOwn = shard.regional(own);
        final long perToken = regionalOwn ? shard.regional.unitsPerToken(own) : 1;
        final Limit ownLimit = regionalOwn ? shard.regional.limit(own, shard.id, shard.shardCount) : shard.limit(own);
        final long one = regionalOwn ? RegionalShares.cost(1, perToken, ownLimit) : 1;
        CompiledPolicy named = own;
        Limit namedLimit = ownLimit;
        boolean allowed = one >= 0 && shard.table.peek(work.keys, work.entries.keyOffset[i], work.entries.keyLength[i],
            work.entries.keyHash[i], ownLimit, one, 0, now, verdict);
        ReasonCode reason = one < 0 ? ReasonCode.RATE_LIMITED : verdict.reason();
        long remaining = one < 0 ? 0 : tokensThere(verdict, one) / perToken;
        long retry = one < 0 ? ShardContext.REGION_SHARE_RETRY_NANOS : verdict.retryAfterNanos();
        long reset = one < 0 ? ShardContext.REGION_SHARE_RETRY_NANOS : verdict.resetAfterNanos();
        final int parts = work.stacked ? work.stackCount[i] : 0;
        for (int k = 0; k < parts && allowed; k++)
        {
            final int p = work.stackFrom[i] + k;
            final CompiledPolicy part = work.parts.policy[p];
            final Limit limit = shard.limit(part);
            final boolean fits = shard.table.peek(work.keys, work.parts.keyOffset[p], work.parts.keyLength[p],
                work.parts.keyHash[p], limit, 1, part.floorFor(own, shard.id, shard.shardCount), now, verdict);
            final long there = tokensThere(verdict, 1);
            if (!fits || there < remaining)
            {
                named = part;
                namedLimit = limit;
                allowed = fits;
                reason = verdict.reason();
                remaining = there;
                retry = verdict.retryAfterNanos();
                reset = verdict.resetAfterNanos();
            }
        }
        // A region's answer is in requests: its burst divided by what one request costs at its share.
        final long burst = named == own ? ownLimit.burstTokens() / perToken : namedLimit.burstTokens();
        ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), allowed, reason,
            named.ordinal(), remaining, burst, allowed ? 0 : retry, reset, named.version(), named.windowSeconds());
        work.entries.policy[i] = named;
        shard.answered(named.ordinal(), allowed);
    }

    /**
     * The whole tokens a key has now, from a peek of {@code asked} tokens: a peek that allowed
     * plainly tells what would be left after them, so they are added back; one that refused, or
     * allowed only within an overage or a wait, had less than them (what it tells is what is there).
     */
    static long tokensThere(final Verdict peeked, final long asked)
    {
        return peeked.reason() == ReasonCode.ALLOWED ? peeked.remainingTokens() + asked : peeked.remainingTokens();
    }
}
