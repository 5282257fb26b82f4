package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.Verdict;
import dev.limiter.server.table.BucketTable;

import java.util.concurrent.TimeUnit;

/**
 * What the deciders of one shard share, all owned by the shard's thread: its bucket table, the
 * verdict every table call writes, its counters and hot keys, its log (cluster mode) and its
 * region's shares (a node in a region). Also the steps every kind of decision takes: charge a
 * key, write a record, count.
 */
final class ShardContext
{
    /** Retry-after told to a request the region's share cannot hold: the next exchange may move the share. */
    static final long REGION_SHARE_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

    final int id;
    final int shardCount;
    final BucketTable table;
    final Verdict verdict = new Verdict();
    final PolicyCounters counters;
    final HotKeys hotKeys;
    /** Cluster mode only: every charge is appended for the log. Set before the shard decides anything. */
    ShardLog log;
    /** Set before the shard decides anything when the node belongs to a region; null otherwise. */
    RegionalShares regional;

    ShardContext(final int id, final int shardCount, final BucketTable table, final PolicyCounters counters,
        final HotKeys hotKeys)
    {
        this.id = id;
        this.shardCount = shardCount;
        this.table = table;
        this.counters = counters;
        this.hotKeys = hotKeys;
    }

    /** {@code policy}'s limit as this shard holds it (a share of it, when split over the shards). */
    Limit limit(final CompiledPolicy policy)
    {
        return policy.limitOnShard(id, shardCount);
    }

    /** Whether {@code policy} is decided against this node's region's share of it. */
    boolean regional(final CompiledPolicy policy)
    {
        return policy.regional() && regional != null;
    }

    /**
     * Charges one key (its acquire, logged) and, when a concurrency limit grants it, records the
     * lease {@code leaseId} on it ({@link BucketTable#takeLease}: STORE_FULL, and nothing charged,
     * when the record has no room). The outcome is in {@link #verdict}.
     *
     * @return whether a lease was taken
     */
    boolean charge(final FrameWork work, final int keyOffset, final int keyLength, final long keyHash,
        final CompiledPolicy policy, final Limit limit, final int cost, final long leaseId, final long now)
    {
        table.acquire(work.keys, keyOffset, keyLength, keyHash, policy.ordinal(), limit, cost, now, verdict);
        final boolean leasing = verdict.allowed() && limit.leases();
        final boolean taken = leasing && table.takeLease(work.keys, keyOffset, keyLength, keyHash, policy.ordinal(),
            limit, leaseId, limit.costUnits(cost), verdict.timeNanos(), now, verdict);
        if (log != null)
        {
            // Logged whatever the outcome (a full table's sweep changed it too); a leased grant with its id, also when
            // its record found no room: a replica then gives it back as this table did.
            if (leasing)
            {
                log.appendLeased(work.keys, keyOffset, keyLength, policy.ordinal(), cost, leaseId, now);
            }
            else
            {
                log.append(work.keys, keyOffset, keyLength, policy.ordinal(), cost, now);
            }
        }
        return taken;
    }

    /**
     * The record names {@code policy}; its limit is the burst of the key that answered ({@code limit}: a share, when
     * split).
     */
    static void putRecord(final FrameWork work, final int i, final CompiledPolicy policy, final Limit limit,
        final boolean allowed, final ReasonCode reason, final long remaining, final long retryAfter,
        final long resetAfter)
    {
        ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), allowed, reason,
            policy.ordinal(), remaining, limit.burstTokens(), retryAfter, resetAfter, policy.version(),
            policy.windowSeconds());
    }

    /**
     * Entry {@code i}'s grant took its lease ({@link FrameWork#leaseId}): its record says so, the response lists it.
     */
    static void leased(final FrameWork work, final int i, final int check)
    {
        ResultCodec.markLease(work.response, ResultCodec.recordOffset(work.frameStart, i));
        work.leased[i] = true;
        work.leaseCheck[i] = check;
        work.anyLeased = true;
    }

    /** Counts an answer of entry scope {@code ordinal}: allowed or denied. */
    void answered(final int ordinal, final boolean allowed)
    {
        counters.increment(ordinal, allowed ? PolicyCounters.ALLOWED : PolicyCounters.DENIED);
    }

    /**
     * Counts a decision that went into its policy's soft overage, unless {@code counted} (the
     * ordinal this request counted last) is that policy already.
     *
     * @return the ordinal counted last for this request
     */
    int countOverage(final int ordinal, final ReasonCode reason, final int counted)
    {
        if (reason == ReasonCode.SOFT_OVERAGE && ordinal != counted)
        {
            counters.increment(ordinal, PolicyCounters.OVERAGE);
            return ordinal;
        }
        return counted;
    }

    /**
     * Publishes what this shard's share of a split policy holds after a decision (the whole tokens
     * its tightest limit has left), when {@code policy} is split; the frame routers read it to send
     * requests to shares that have tokens. Writes only on a change.
     */
    void shareDecided(final CompiledPolicy policy, final long remaining)
    {
        if (policy.routedToAnyShare(shardCount))
        {
            counters.set(policy.ordinal(), PolicyCounters.SHARE_TOKENS, Math.max(0, remaining) + 1);
        }
    }
}
