package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.Verdict;
import dev.limiter.server.table.BucketTable;

/**
 * A RELEASE: each entry gives back its lease ({@link FrameWork#releasedLease}) on every limit it was
 * charged against that takes leases (its own policy, its stacked parts and extra limits, a shadow
 * policy's bucket), each release that changed the table logged. Nothing is charged; a key frees its
 * lease only if it holds one of that id (a forged, foreign or repeated id frees nothing and is
 * counted). The record names the first limit that takes leases (else the entry's own policy) and
 * what it has free now.
 */
final class ReleaseDecider
{
    private final ShardContext shard;

    ReleaseDecider(final ShardContext shard)
    {
        this.shard = shard;
    }

    /**
     * Releases this shard's entries of the frame at {@code now}; returns whether the answer must wait for the commit
     * (STRICT).
     */
    boolean release(final FrameWork work, final long now)
    {
        boolean strict = false;
        final long lease = work.releasedLease;
        final Verdict verdict = shard.verdict;
        for (int i = 0; i < work.count; i++)
        {
            if (work.entries.shard[i] != shard.id)
            {
                continue;
            }
            final CompiledPolicy own = work.entries.policy[i];
            final Limit ownLimit = shard.limit(own);
            if (!work.leaseMatches[i])
            {
                // Granted under other policies or versions than decide this entry now: its lease is in
                // their keys (where it expires); nothing here is its to give back. Answered with what
                // the entry's own key has free, read without a change.
                shard.table.peek(work.keys, work.entries.keyOffset[i], work.entries.keyLength[i],
                    work.entries.keyHash[i], ownLimit, 0, 0, now, verdict);
                ShardContext.putRecord(work, i, own, ownLimit, true, ReasonCode.RELEASED, verdict.remainingTokens(), 0,
                    verdict.resetAfterNanos());
                continue;
            }
            strict |= giveBack(work, own, ownLimit, work.entries.keyOffset[i], work.entries.keyLength[i],
                work.entries.keyHash[i], lease, now);
            CompiledPolicy named = own;
            boolean found = ownLimit.leases();
            long remaining = verdict.remainingTokens();
            long reset = verdict.resetAfterNanos();
            final int parts = work.stacked ? work.stackCount[i] : 0;
            for (int k = 0; k < parts; k++)
            {
                final int p = work.stackFrom[i] + k;
                final CompiledPolicy part = work.parts.policy[p];
                final Limit limit = shard.limit(part);
                strict |= giveBack(work, part, limit, work.parts.keyOffset[p], work.parts.keyLength[p],
                    work.parts.keyHash[p], lease, now);
                if (!found && limit.leases())
                {
                    found = true;
                    named = part;
                    remaining = verdict.remainingTokens();
                    reset = verdict.resetAfterNanos();
                }
            }
            work.entries.policy[i] = named;
            ShardContext.putRecord(work, i, named, shard.limit(named), true, ReasonCode.RELEASED, remaining, 0, reset);
        }
        for (int j = 0; j < work.shadowCount; j++)
        {
            if (work.shadows.shard[j] == shard.id && work.leaseMatches[work.shadows.entry[j]])
            {
                final CompiledPolicy shadow = work.shadows.policy[j];
                giveBack(work, shadow, shard.limit(shadow), work.shadows.keyOffset[j], work.shadows.keyLength[j],
                    work.shadows.keyHash[j], lease, now);
            }
        }
        return strict;
    }

    /**
     * Gives back the lease {@code lease} on one key of a limit that takes leases (others hold none:
     * nothing to do), counting what it found, and logs it when the table changed (the lease was
     * held, or had expired and its record went). Returns whether that log record must be committed
     * before the answer (a STRICT policy's).
     */
    private boolean giveBack(final FrameWork work, final CompiledPolicy policy, final Limit limit, final int keyOffset,
        final int keyLength, final long keyHash, final long lease, final long now)
    {
        final BucketTable.LeaseRelease outcome = shard.table.releaseLease(work.keys, keyOffset, keyLength, keyHash,
            limit, lease, now, shard.verdict);
        if (!limit.leases())
        {
            return false;
        }
        shard.counters.increment(policy.ordinal(), outcome == BucketTable.LeaseRelease.FREED ? PolicyCounters.RELEASED :
            outcome == BucketTable.LeaseRelease.EXPIRED ? PolicyCounters.RELEASE_EXPIRED
                : PolicyCounters.RELEASE_UNKNOWN);
        if (shard.log == null || outcome == BucketTable.LeaseRelease.UNKNOWN)
        {
            return false;
        }
        shard.log.appendRelease(work.keys, keyOffset, keyLength, policy.ordinal(), 1, lease, now);
        return policy.strict();
    }
}
