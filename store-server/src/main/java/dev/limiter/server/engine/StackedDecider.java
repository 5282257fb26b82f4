package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.Verdict;
import dev.limiter.server.table.BucketTable;

/**
 * Hierarchical limits: an entry charged against its own policy and stacked parts (shared budgets,
 * extra limits), all or none. Every scope is checked first (a part's reserve counting as a floor
 * for requests that rank below it); only if all would allow are all charged, and logged. Otherwise
 * nothing changes anywhere and the first scope that denies (its own policy, then the parts in
 * order) is what the record names. If the store is full when a part is charged, the parts already
 * charged stay charged (an under-admission, never an over-one).
 */
final class StackedDecider
{
    /** {@code denying} when every scope would allow. */
    private static final int NONE = -2;
    /** {@code denying} when the entry's own policy refuses. */
    private static final int OWN = -1;

    private final ShardContext shard;

    StackedDecider(final ShardContext shard)
    {
        this.shard = shard;
    }

    /**
     * Decides entry {@code i} at {@code now}; returns whether any scope is STRICT (the frame then waits for the
     * commit).
     */
    boolean decide(final FrameWork work, final int i, final long now)
    {
        final int from = work.stackFrom[i];
        final int parts = work.stackCount[i];
        final int cost = work.entries.cost[i];
        final CompiledPolicy own = work.entries.policy[i];
        final BucketTable table = shard.table;
        final Verdict verdict = shard.verdict;
        final KeyColumns keys = work.parts;
        boolean strict = own.strict();
        // Every budget the request touches counts for hot keys: a stacked route budget is the classic hot key.
        shard.hotKeys.decided(work.keys, work.entries.keyOffset[i], work.entries.keyLength[i],
            work.entries.keyHash[i], cost, now);
        for (int k = from; k < from + parts; k++)
        {
            if (keys.policy[k].limitIndex() == 0) // an extra limit's bucket is the same key again
            {
                shard.hotKeys.decided(work.keys, keys.keyOffset[k], keys.keyLength[k], keys.keyHash[k], cost, now);
            }
            strict |= keys.policy[k].strict();
        }
        int denying = table.peek(work.keys, work.entries.keyOffset[i], work.entries.keyLength[i],
            work.entries.keyHash[i], shard.limit(own), cost, 0, now, verdict) ? NONE : OWN;
        // A WAIT limit may allow only after a wait: the request then waits for the longest of them.
        long wait = verdict.reason() == ReasonCode.RESERVED ? verdict.retryAfterNanos() : 0;
        for (int k = 0; k < parts && denying == NONE; k++)
        {
            // A shared budget's reserve is a floor for requests whose own policy ranks below it.
            final int p = from + k;
            final CompiledPolicy part = keys.policy[p];
            if (!table.peek(work.keys, keys.keyOffset[p], keys.keyLength[p], keys.keyHash[p], shard.limit(part), cost,
                part.floorFor(own, shard.id, shard.shardCount), now, verdict))
            {
                denying = k;
            }
            else if (verdict.reason() == ReasonCode.RESERVED)
            {
                wait = Math.max(wait, verdict.retryAfterNanos());
            }
        }
        if (denying != NONE)
        {
            // One scope refuses: nothing is charged or stored anywhere (so nothing is logged either);
            // the answer is that scope's view, which the peek that refused left in the verdict.
            final CompiledPolicy named = denying == OWN ? own : keys.policy[from + denying];
            ShardContext.putRecord(work, i, named, shard.limit(named), false, verdict.reason(),
                verdict.remainingTokens(), verdict.retryAfterNanos(), verdict.resetAfterNanos());
            shard.shareDecided(own, verdict.remainingTokens());
            answer(work, i, named, false);
        }
        else
        {
            chargeAll(work, i, now, wait);
        }
        return strict;
    }

    /** The answer names the scope that limited it, and is counted under it. */
    private void answer(final FrameWork work, final int i, final CompiledPolicy named, final boolean allowed)
    {
        work.entries.policy[i] = named;
        shard.answered(named.ordinal(), allowed);
    }

    /**
     * Every scope allows: charges all, the record naming the tightest (fewest tokens left). Every
     * lease the request takes is named by the entry's one lease id.
     */
    private void chargeAll(final FrameWork work, final int i, final long now, final long wait)
    {
        final int from = work.stackFrom[i];
        final int parts = work.stackCount[i];
        final int cost = work.entries.cost[i];
        final CompiledPolicy own = work.entries.policy[i];
        final Verdict verdict = shard.verdict;
        final KeyColumns keys = work.parts;
        boolean leases = shard.charge(work, work.entries.keyOffset[i], work.entries.keyLength[i],
            work.entries.keyHash[i], own, shard.limit(own), cost, work.leaseId[i], now);
        CompiledPolicy named = own;
        // A policy's extra limits follow it in the parts and share its ordinal: count its overage once.
        int overageCounted = shard.countOverage(own.ordinal(), verdict.reason(), -1);
        int check = leases ? LeaseChecks.fold(LeaseChecks.SEED, own) : LeaseChecks.SEED;
        boolean allowed = verdict.allowed();
        ReasonCode reason = verdict.reason();
        long remaining = verdict.remainingTokens();
        long retry = verdict.retryAfterNanos();
        long reset = verdict.resetAfterNanos();
        for (int k = 0; k < parts && allowed; k++)
        {
            final int p = from + k;
            final CompiledPolicy part = keys.policy[p];
            if (shard.charge(work, keys.keyOffset[p], keys.keyLength[p], keys.keyHash[p], part, shard.limit(part), cost,
                work.leaseId[i], now))
            {
                leases = true;
                check = LeaseChecks.fold(check, part);
            }
            overageCounted = shard.countOverage(part.ordinal(), verdict.reason(), overageCounted);
            // The tightest scope names the answer; on a tie, one that went into its soft overage.
            if (!verdict.allowed() || verdict.remainingTokens() < remaining ||
                verdict.remainingTokens() == remaining && verdict.reason() == ReasonCode.SOFT_OVERAGE)
            {
                named = part;
                allowed = verdict.allowed();
                reason = verdict.reason();
                remaining = verdict.remainingTokens();
                retry = verdict.retryAfterNanos();
                reset = verdict.resetAfterNanos();
            }
        }
        if (allowed && wait > 0)
        {
            reason = ReasonCode.RESERVED;
            retry = wait;
        }
        ShardContext.putRecord(work, i, named, shard.limit(named), allowed, reason, remaining, retry, reset);
        shard.shareDecided(own, remaining); // the tightest of its limits here
        if (allowed && leases)
        {
            ShardContext.leased(work, i, check);
        }
        answer(work, i, named, allowed);
    }
}
