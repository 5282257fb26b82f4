package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.Limit;
import dev.limiter.server.cluster.DecisionsEntry;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.table.BucketRates;
import dev.limiter.server.table.BucketTable;
import dev.limiter.protocol.Verdict;
import io.netty.channel.EventLoop;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * One shard: a bucket table and the single thread that owns it, so the decision path needs no
 * lock. The owner is either one of the node's event loops (the default: a frame whose keys all
 * live on the connection's own event loop is decided inline, with no hand-off at all) or a
 * dedicated thread fed through a bounded many-to-one queue ({@code --shard-threads}, for machines
 * with cores to spare; an Agrona {@link Agent} run by an {@link AgentRunner}, idling with
 * {@link ShardIdleStrategy}). Either way it decides every entry of a frame that belongs to it, writes
 * the result records in place, and completes the frame when it is the last shard to finish.
 */
public final class Shard implements Replication.DecidingShard
{
    private static final Logger LOG = LoggerFactory.getLogger(Shard.class);
    private static final int QUEUE_CAPACITY = 4096;
    /** Frames a dedicated thread takes from its queue per duty cycle. */
    private static final int FRAMES_PER_CYCLE = 64;
    /** Entries whose table memory is touched before any of them is decided. */
    private static final int TOUCH_AHEAD = 16;

    private final int id;
    private final int shardCount;
    private final int[] touched = new int[TOUCH_AHEAD];
    /** What touching read: kept so that the reads are not optimised away (owner thread). */
    private long touchedSum;
    private final BucketTable table;
    /** The busiest keys of this shard (written by the owner thread only). */
    private final HotKeys hotKeys = new HotKeys();
    private final MonotonicClock clock;
    private final Verdict verdict = new Verdict();

    /** Owner when the shard lives on an event loop; null in dedicated-thread mode. */
    private final EventLoop loop;
    /** Dedicated-thread mode only. */
    private final ManyToOneConcurrentArrayQueue<FrameWork> queue;
    private final AgentRunner runner;
    private final ShardIdleStrategy idleStrategy;
    private volatile boolean running = true;

    /** Cluster mode only: the replication state and this shard's group commit. */
    private Replication replication;
    private ServerMetrics metrics;
    /** Set before the shard decides anything when the node belongs to a region; null otherwise. */
    private RegionalShares regional;
    /** Retry-after told to a request the region's share cannot hold: the next exchange may move the share. */
    private static final long REGION_SHARE_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
    private ShardLog log;

    /**
     * Counts by policy ordinal, written only by the owner thread: decisions, overage, releases,
     * shadow evaluations, and what this shard's share of a split policy
     * ({@link CompiledPolicy#routedToAnyShare}) held after its last decision, which the frame routers
     * read to send requests to shares that have tokens.
     */
    private final PolicyCounters counters = new PolicyCounters();

    /**
     * @param shardCount the node's shards (a stacked GLOBAL budget keeps 1/shardCount of itself here)
     * @param loop       the event loop that owns this shard, or null for a dedicated thread
     */
    public Shard(final int id, final int shardCount, final int maxBuckets, final int keyArenaBytes, final MonotonicClock clock,
        final BucketRates rates, final EventLoop loop)
    {
        this.id = id;
        this.shardCount = shardCount;
        this.clock = clock;
        this.loop = loop;
        this.table = new BucketTable(maxBuckets, keyArenaBytes, rates, false);
        if (loop == null)
        {
            this.queue = new ManyToOneConcurrentArrayQueue<>(QUEUE_CAPACITY);
            this.idleStrategy = new ShardIdleStrategy(() -> !queue.isEmpty());
            this.runner = new AgentRunner(idleStrategy, this::failed, null, new DedicatedAgent());
            AgentRunner.startOnThread(runner, runnable ->
            {
                final Thread thread = new Thread(runnable);
                thread.setDaemon(true);
                return thread;
            });
        }
        else
        {
            this.queue = null;
            this.idleStrategy = null;
            this.runner = null;
        }
    }

    /** This node belongs to a region: regional policies are decided against its share ({@link RegionalShares}). */
    public void regions(final RegionalShares shares)
    {
        this.regional = shares;
    }

    /**
     * Cluster mode: decide only as the ready leader, record every decision for the log, in
     * {@link DecisionsEntry}'s compact layout or (for a cluster that still runs older builds) its classic one.
     */
    public void replicate(final Replication replication, final ServerMetrics metrics,
        final DecisionsEntry.Rates rates, final int maxUncommittedBytes, final boolean compactLog)
    {
        if (loop == null)
        {
            throw new IllegalStateException("cluster mode needs shards on event loops (drop --shard-threads)");
        }
        this.replication = replication;
        this.metrics = metrics;
        this.log = new ShardLog(id, loop, replication, metrics, rates, maxUncommittedBytes, compactLog);
    }

    /** The shadow evaluations of the frame on this shard when it holds nothing else of the frame, else 0. */
    private int shadowsOnly(final FrameWork work)
    {
        for (int i = 0; i < work.count; i++)
        {
            if (work.shard[i] == id)
            {
                return 0;
            }
        }
        int shadows = 0;
        for (int j = 0; j < work.shadowCount; j++)
        {
            shadows += work.shadows.shard[j] == id ? 1 : 0;
        }
        return shadows;
    }

    /**
     * Whether this shard's replication log is too far behind to take more decisions (any thread:
     * reads a flag the owner thread publishes, none of the shard's memory).
     */
    boolean logBehind()
    {
        final ShardLog current = log;
        return current != null && current.behind();
    }

    /** Stopping: release every frame waiting on the log (runs on the owner loop; waits for it). */
    public void abandonLog()
    {
        if (log != null && !loop.isShuttingDown())
        {
            loop.submit(log::abandon).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    @Override
    public Executor owner()
    {
        return loop;
    }

    @Override
    public void resyncFrom(final BucketTable committed, final long term, final long submission)
    {
        table.copyFrom(committed);
        log.resync(table, term, submission);
        table.publish();
    }

    @Override
    public CompletableFuture<Void> flushForHandOver()
    {
        return log.flushForHandOver();
    }

    /**
     * Hands a frame to this shard. Called on the connection's event loop: runs inline when that
     * loop owns the shard, otherwise queues it for the owner.
     */
    void submit(final FrameWork work)
    {
        if (loop != null)
        {
            if (loop.inEventLoop())
            {
                process(work);
            }
            else
            {
                loop.execute(work.taskFor(this));
            }
            return;
        }
        // Dedicated thread: spin (back-pressure on the event loop) while its queue is full.
        while (!queue.offer(work))
        {
            if (!running)
            {
                throw new RejectedExecutionException("shard " + id + " is stopped");
            }
            Thread.onSpinWait();
        }
        idleStrategy.wake();
    }

    /** The duty cycle of a dedicated shard thread (--shard-threads), run by an Agrona {@link AgentRunner}. */
    private final class DedicatedAgent implements Agent
    {
        @Override
        public int doWork()
        {
            return queue.drain(Shard.this::process, FRAMES_PER_CYCLE);
        }

        @Override
        public void onClose()
        {
            running = false;
            // Answer whatever is still queued rather than leave connections waiting forever.
            FrameWork leftover;
            while ((leftover = queue.poll()) != null)
            {
                leftover.failed = true;
                leftover.shardDone();
            }
        }

        @Override
        public String roleName()
        {
            return "limiter-shard-" + id;
        }
    }

    private void failed(final Throwable error)
    {
        LOG.error("shard {} failed deciding a frame", id, error);
    }

    /** Decides this shard's entries of a frame. Runs on the owner thread only. */
    void process(final FrameWork work)
    {
        boolean strict = false;
        final long appendedBefore = log == null ? 0 : log.appended();
        try
        {
            if (replication != null && !replication.canDecide())
            {
                final int shadows = shadowsOnly(work);
                if (shadows > 0)
                {
                    // Only shadow evaluations fell on this shard, whose group another node leads: a
                    // shadow never refuses a request, so they are skipped (and counted), not refused.
                    metrics.shadowsSkipped(shadows);
                }
                else
                {
                    work.refuseNotLeader(id);
                }
                work.shardDone();
                return;
            }
            if (log != null && log.saturated() && work.shardsInFrame == 1)
            {
                // The log is behind: refuse rather than decide beyond it. A frame across several shards
                // was refused whole by the router when any of them was behind; one that got past it just
                // before this log fell behind is decided (the bound is exceeded by frames in flight at
                // most), so that an OVERLOADED answer always means nothing in the frame was decided.
                work.overloaded = true;
                work.shardDone();
                return;
            }
            final long now = replication != null ? replication.clusterNanos() : clock.nanoTime();
            // UTC = cluster time + offset, for windows; a logged batch keeps one offset, which replicas replay with.
            table.wallClockOffset(log != null ? log.wallClockOffset(clock.wallNanos() - now) : clock.wallNanos() - now);
            if (work.release)
            {
                strict = release(work, now);
            }
            for (int i = 0; i < work.count && !work.release; i++)
            {
                if (i % TOUCH_AHEAD == 0)
                {
                    touchAhead(work, i, Math.min(work.count, i + TOUCH_AHEAD));
                }
                if (work.shard[i] != id)
                {
                    continue;
                }
                if (work.cost[i] == 0)
                {
                    check(work, i, now);
                    continue;
                }
                if (work.stacked && work.stackCount[i] > 0)
                {
                    strict |= decideStacked(work, i, now);
                    continue;
                }
                final CompiledPolicy policy = work.policy[i];
                if (policy.regional() && regional != null)
                {
                    strict |= decideRegional(work, i, policy, now);
                    continue;
                }
                final Limit limit = policy.limitOnShard(id, shardCount);
                final boolean leaseTaken = decide(work, work.keyOffset[i], work.keyLength[i], work.keyHash[i], policy, limit, work.cost[i],
                    work.leaseId[i], now);
                hotKeys.decided(work.keys, work.keyOffset[i], work.keyLength[i], work.keyHash[i], work.cost[i], now);
                strict |= log != null && policy.strict();
                ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), verdict.allowed(),
                    verdict.reason(), policy.ordinal(), verdict.remainingTokens(), policy.limit().burstTokens(),
                    verdict.retryAfterNanos(), verdict.resetAfterNanos(), policy.version(), policy.windowSeconds());
                if (leaseTaken)
                {
                    leased(work, i, FrameWork.leaseCheck(FrameWork.LEASE_CHECK_SEED, policy));
                }
                final long hotRate = policy.tokenLeaseHotRate();
                if (hotRate != 0 && hotKeys.tokensPerSecond(work.keyHash[i], work.keyLength[i]) >= hotRate)
                {
                    // SDKs take token blocks of this key while it stays this hot (tokenLease.hotRate).
                    ResultCodec.markHotKey(work.response, ResultCodec.recordOffset(work.frameStart, i));
                }
                counters.increment(policy.ordinal(), verdict.allowed() ? PolicyCounters.ALLOWED : PolicyCounters.DENIED);
                countOverage(policy.ordinal(), verdict.reason(), -1);
                if (policy.routedToAnyShare(shardCount))
                {
                    shareDecided(policy.ordinal(), verdict.remainingTokens());
                }
            }
            for (int j = 0; j < work.shadowCount && !work.release; j++)
            {
                if (work.shadows.shard[j] != id)
                {
                    continue;
                }
                // A shadow spends its own bucket (replicated like any other) and is only counted.
                final CompiledPolicy shadow = work.shadows.policy[j];
                final boolean regionalShadow = shadow.regional() && regional != null;
                final Limit shadowLimit = regionalShadow ? regional.limit(shadow, id, shardCount) : shadow.limitOnShard(id, shardCount);
                final long shadowCost = regionalShadow ? RegionalShares.cost(work.shadows.cost[j], regional.unitsPerToken(shadow), shadowLimit) :
                    work.shadows.cost[j];
                if (shadowCost < 0)
                {
                    continue; // this region's share of the shadowed limit cannot hold the request: nothing to evaluate
                }
                if (shadowCost == 0)
                {
                    // A check: what the shadow would answer to one token, changing nothing.
                    final long one = regionalShadow ? RegionalShares.cost(1, regional.unitsPerToken(shadow), shadowLimit) : 1;
                    final boolean would = one >= 0 && table.peek(work.keys, work.shadows.keyOffset[j], work.shadows.keyLength[j],
                        work.shadows.keyHash[j], shadowLimit, one, 0, now, verdict);
                    counters.increment(shadow.ordinal(), would ? PolicyCounters.SHADOW_ALLOWED : PolicyCounters.SHADOW_DENIED);
                    continue;
                }
                final long leaseId = work.leaseId[work.shadowEntry[j]];
                if (decide(work, work.shadows.keyOffset[j], work.shadows.keyLength[j], work.shadows.keyHash[j], shadow, shadowLimit,
                    (int)shadowCost, leaseId, now))
                {
                    work.shadowLeased[j] = true;
                    work.shadowLeaseId[j] = leaseId;
                    work.shadowLeaseCheck[j] = FrameWork.leaseCheck(FrameWork.LEASE_CHECK_SEED, shadow);
                    work.anyLeased = true;
                }
                counters.increment(shadow.ordinal(), verdict.allowed() ? PolicyCounters.SHADOW_ALLOWED : PolicyCounters.SHADOW_DENIED);
            }
        }
        catch (final Throwable e)
        {
            work.failed = true;
            LOG.error("shard {} failed on a frame; the frame is answered with an ERROR", id, e);
        }
        table.publish(); // what status and metrics may read of this table, from other threads
        if (log != null)
        {
            // STRICT: answer only once this frame's decisions are committed. A frame that recorded
            // none (every stacked request refused: nothing charged, nothing logged) waits for nothing.
            if (strict && !work.failed && log.appended() != appendedBefore)
            {
                log.completeAfterCommit(work);
                log.scheduleFlush();
                return;
            }
            log.scheduleFlush();
        }
        work.shardDone();
    }

    /**
     * Touches the table memory that deciding entries {@code from} to {@code to} of this shard will
     * read (slots, then stored keys), so that their cache misses overlap instead of coming one per
     * decision after another (BucketTableBenchmark.decideShuffledBatchTouchedFirst).
     */
    private void touchAhead(final FrameWork work, final int from, final int to)
    {
        for (int i = from; i < to; i++)
        {
            touched[i - from] = work.shard[i] == id ? table.touchSlot(work.keyHash[i]) : -1;
        }
        long sum = 0;
        for (int i = from; i < to; i++)
        {
            sum += table.touchKey(touched[i - from]);
        }
        touchedSum += sum;
    }

    public void stop()
    {
        if (runner == null)
        {
            return;
        }
        running = false;
        idleStrategy.wake();
        runner.close(); // waits for the thread, which answers what is still queued
    }

    @Override
    public int id()
    {
        return id;
    }

    /** The last report of this shard's busiest keys (any thread). */
    HotKeys.Report hotKeys()
    {
        return hotKeys.report();
    }

    public BucketTable table()
    {
        return table;
    }

    /**
     * Hierarchical limits: the entry's own policy and every stacked part are checked first (a
     * part's reserve counting as a floor for requests that rank below it); only if all would allow
     * are all charged, and logged. Otherwise nothing changes anywhere and the first scope that
     * denies (its own policy, then the parts in order) is what the record names. If the store is full when a part
     * is charged, the parts already charged stay charged (an under-admission, never an over-one).
     *
     * @return whether any scope is STRICT (the frame then waits for the commit)
     */
    private boolean decideStacked(final FrameWork work, final int i, final long now)
    {
        final int from = work.stackFrom[i];
        final int parts = work.stackCount[i];
        final int cost = work.cost[i];
        final CompiledPolicy own = work.policy[i];
        boolean strict = own.strict();
        // Every budget the request touches counts for hot keys: a stacked route budget is the classic hot key.
        hotKeys.decided(work.keys, work.keyOffset[i], work.keyLength[i], work.keyHash[i], cost, now);
        for (int k = 0; k < parts; k++)
        {
            if (work.parts.policy[from + k].limitIndex() == 0) // an extra limit's bucket is the same key again
            {
                hotKeys.decided(work.keys, work.parts.keyOffset[from + k], work.parts.keyLength[from + k], work.parts.keyHash[from + k], cost, now);
            }
        }
        int denying = table.peek(work.keys, work.keyOffset[i], work.keyLength[i], work.keyHash[i], own.limitOnShard(id, shardCount), cost, 0, now, verdict) ? -2 : -1;
        // A WAIT limit may allow only after a wait: the request then waits for the longest of them.
        long wait = verdict.reason() == ReasonCode.RESERVED ? verdict.retryAfterNanos() : 0;
        for (int k = 0; k < parts && denying == -2; k++)
        {
            // A shared budget's reserve is a floor for requests whose own policy ranks below it.
            final CompiledPolicy part = work.parts.policy[from + k];
            if (!table.peek(work.keys, work.parts.keyOffset[from + k], work.parts.keyLength[from + k], work.parts.keyHash[from + k],
                part.limitOnShard(id, shardCount), cost, part.floorFor(own, id, shardCount), now, verdict))
            {
                denying = k;
            }
            else if (verdict.reason() == ReasonCode.RESERVED)
            {
                wait = Math.max(wait, verdict.retryAfterNanos());
            }
        }
        for (int k = 0; k < parts; k++)
        {
            strict |= work.parts.policy[from + k].strict();
        }
        CompiledPolicy named;
        final boolean answered;
        if (denying != -2)
        {
            // One scope refuses: nothing is charged or stored anywhere (so nothing is logged either);
            // the answer is that scope's view, which the peek that refused left in the decision.
            named = denying == -1 ? own : work.parts.policy[from + denying];
            answered = false;
            putRecord(work, i, named, named.limitOnShard(id, shardCount), answered, verdict.reason(), verdict.remainingTokens(), verdict.retryAfterNanos(),
                verdict.resetAfterNanos());
            if (own.routedToAnyShare(shardCount))
            {
                shareDecided(own.ordinal(), verdict.remainingTokens());
            }
        }
        else
        {
            // Every scope allows: charge all; the record names the tightest (fewest tokens left).
            // Every lease the request takes is named by the entry's one lease id.
            boolean leases = decide(work, work.keyOffset[i], work.keyLength[i], work.keyHash[i], own, own.limitOnShard(id, shardCount), cost,
                work.leaseId[i], now);
            named = own;
            // A policy's extra limits follow it in the parts and share its ordinal: count its overage once.
            int overageCounted = countOverage(own.ordinal(), verdict.reason(), -1);
            int check = leases ? FrameWork.leaseCheck(FrameWork.LEASE_CHECK_SEED, own) : FrameWork.LEASE_CHECK_SEED;
            boolean allowed = verdict.allowed();
            ReasonCode reason = verdict.reason();
            long remaining = verdict.remainingTokens();
            long retry = verdict.retryAfterNanos();
            long reset = verdict.resetAfterNanos();
            for (int k = 0; k < parts && allowed; k++)
            {
                final CompiledPolicy part = work.parts.policy[from + k];
                if (decide(work, work.parts.keyOffset[from + k], work.parts.keyLength[from + k], work.parts.keyHash[from + k], part,
                    part.limitOnShard(id, shardCount), cost, work.leaseId[i], now))
                {
                    leases = true;
                    check = FrameWork.leaseCheck(check, part);
                }
                overageCounted = countOverage(part.ordinal(), verdict.reason(), overageCounted);
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
            answered = allowed;
            if (allowed && wait > 0)
            {
                reason = ReasonCode.RESERVED;
                retry = wait;
            }
            putRecord(work, i, named, named.limitOnShard(id, shardCount), allowed, reason, remaining, retry, reset);
            if (own.routedToAnyShare(shardCount))
            {
                shareDecided(own.ordinal(), remaining); // the tightest of its limits here
            }
            if (allowed && leases)
            {
                leased(work, i, check);
            }
        }
        work.policy[i] = named; // the answer names the policy that limited it
        counters.increment(named.ordinal(), answered ? PolicyCounters.ALLOWED : PolicyCounters.DENIED);
        return strict;
    }

    /**
     * A check (cost 0): whether one token would be granted now by the entry's policy and every
     * part it would be charged against (stacked budgets, extra limits; a region's share). Nothing
     * is charged, stored or logged, and no lease is taken. The record names the first scope that
     * refuses, else the one with the fewest tokens, with the whole tokens it has now.
     */
    private void check(final FrameWork work, final int i, final long now)
    {
        final CompiledPolicy own = work.policy[i];
        final boolean regionalOwn = own.regional() && regional != null;
        final long perToken = regionalOwn ? regional.unitsPerToken(own) : 1;
        final Limit ownLimit = regionalOwn ? regional.limit(own, id, shardCount) : own.limitOnShard(id, shardCount);
        final long one = regionalOwn ? RegionalShares.cost(1, perToken, ownLimit) : 1;
        CompiledPolicy named = own;
        Limit namedLimit = ownLimit;
        boolean allowed = one >= 0 && table.peek(work.keys, work.keyOffset[i], work.keyLength[i], work.keyHash[i], ownLimit, one, 0, now,
            verdict);
        ReasonCode reason = one < 0 ? ReasonCode.RATE_LIMITED : verdict.reason();
        long remaining = one < 0 ? 0 : tokensThere(verdict, one) / perToken;
        long retry = one < 0 ? REGION_SHARE_RETRY_NANOS : verdict.retryAfterNanos();
        long reset = one < 0 ? REGION_SHARE_RETRY_NANOS : verdict.resetAfterNanos();
        final int parts = work.stacked ? work.stackCount[i] : 0;
        for (int k = 0; k < parts && allowed; k++)
        {
            final int p = work.stackFrom[i] + k;
            final CompiledPolicy part = work.parts.policy[p];
            final Limit limit = part.limitOnShard(id, shardCount);
            final boolean fits = table.peek(work.keys, work.parts.keyOffset[p], work.parts.keyLength[p], work.parts.keyHash[p], limit, 1,
                part.floorFor(own, id, shardCount), now, verdict);
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
        ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), allowed, reason, named.ordinal(), remaining,
            burst, allowed ? 0 : retry, reset, named.version(), named.windowSeconds());
        work.policy[i] = named;
        counters.increment(named.ordinal(), allowed ? PolicyCounters.ALLOWED : PolicyCounters.DENIED);
    }

    /**
     * The whole tokens a key has now, from a peek of {@code asked} tokens: a peek that allowed
     * plainly tells what would be left after them, so they are added back; one that refused, or
     * allowed only within an overage or a wait, had less than them (what it tells is what is there).
     */
    private static long tokensThere(final Verdict peeked, final long asked)
    {
        return peeked.reason() == ReasonCode.ALLOWED ? peeked.remainingTokens() + asked : peeked.remainingTokens();
    }

    /**
     * Charges one key (its acquire, logged) and, when a concurrency limit grants it, records the
     * entry's lease {@code leaseId} on it ({@link BucketTable#takeLease}: STORE_FULL, and nothing
     * charged, when the record has no room). The outcome is in {@link #verdict}.
     *
     * @return whether a lease was taken
     */
    private boolean decide(final FrameWork work, final int keyOffset, final int keyLength, final long keyHash, final CompiledPolicy policy,
        final Limit limit, final int cost, final long leaseId, final long now)
    {
        table.acquire(work.keys, keyOffset, keyLength, keyHash, policy.ordinal(), limit, cost, now, verdict);
        final boolean leasing = verdict.allowed() && limit.leases();
        final boolean taken = leasing && table.takeLease(work.keys, keyOffset, keyLength, keyHash, policy.ordinal(), limit, leaseId,
            limit.costUnits(cost), verdict.timeNanos(), now, verdict);
        if (log != null)
        {
            // Logged whatever the outcome (a full table's sweep changed it too); a leased grant with its id, also when its
            // record found no room: a replica then gives it back as this table did.
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

    /** Entry {@code i}'s grant took its lease ({@link FrameWork#leaseId}): its record says so, the response lists it. */
    private static void leased(final FrameWork work, final int i, final int check)
    {
        ResultCodec.markLease(work.response, ResultCodec.recordOffset(work.frameStart, i));
        work.leased[i] = true;
        work.leaseCheck[i] = check;
        work.anyLeased = true;
    }

    /**
     * A RELEASE: the entry gives back its lease ({@link FrameWork#releasedLease}) on every limit it
     * was charged against that takes leases (its own policy, its stacked parts and extra limits, a
     * shadow policy's bucket), each release that changed the table logged. Nothing is charged; a
     * key frees its lease only if it holds one of that id (a forged, foreign or repeated id frees
     * nothing and is counted). The record names the first limit that takes leases (else the
     * entry's own policy) and what it has free now.
     *
     * @return whether any of those policies is STRICT (the answer then waits for the commit)
     */
    private boolean release(final FrameWork work, final long now)
    {
        boolean strict = false;
        final long lease = work.releasedLease;
        for (int i = 0; i < work.count; i++)
        {
            if (work.shard[i] != id)
            {
                continue;
            }
            final CompiledPolicy own = work.policy[i];
            CompiledPolicy named = own;
            if (!work.leaseMatches[i])
            {
                // Granted under other policies or versions than decide this entry now: its lease is in
                // their keys (where it expires); nothing here is its to give back. Answered with what
                // the entry's own key has free, read without a change.
                table.peek(work.keys, work.keyOffset[i], work.keyLength[i], work.keyHash[i], own.limitOnShard(id, shardCount), 0, 0, now, verdict);
                putRecord(work, i, own, own.limitOnShard(id, shardCount), true, ReasonCode.RELEASED, verdict.remainingTokens(), 0,
                    verdict.resetAfterNanos());
                continue;
            }
            strict |= giveBack(work, own, own.limitOnShard(id, shardCount), work.keyOffset[i], work.keyLength[i], work.keyHash[i], lease, now);
            boolean found = own.limitOnShard(id, shardCount).leases();
            long remaining = verdict.remainingTokens();
            long reset = verdict.resetAfterNanos();
            final int parts = work.stacked ? work.stackCount[i] : 0;
            for (int k = 0; k < parts; k++)
            {
                final int p = work.stackFrom[i] + k;
                final CompiledPolicy part = work.parts.policy[p];
                final Limit limit = part.limitOnShard(id, shardCount);
                strict |= giveBack(work, part, limit, work.parts.keyOffset[p], work.parts.keyLength[p], work.parts.keyHash[p], lease, now);
                if (!found && limit.leases())
                {
                    found = true;
                    named = part;
                    remaining = verdict.remainingTokens();
                    reset = verdict.resetAfterNanos();
                }
            }
            work.policy[i] = named;
            putRecord(work, i, named, named.limitOnShard(id, shardCount), true, ReasonCode.RELEASED, remaining, 0, reset);
        }
        for (int j = 0; j < work.shadowCount; j++)
        {
            if (work.shadows.shard[j] == id && work.leaseMatches[work.shadowEntry[j]])
            {
                final CompiledPolicy shadow = work.shadows.policy[j];
                giveBack(work, shadow, shadow.limitOnShard(id, shardCount), work.shadows.keyOffset[j], work.shadows.keyLength[j],
                    work.shadows.keyHash[j], lease, now);
            }
        }
        return strict;
    }

    /**
     * Gives back the lease {@code lease} on one key of a limit that takes leases (others hold
     * none: nothing to do), counting what it found, and logs it when the table changed (the lease
     * was held, or had expired and its record went). Returns whether that log record must be
     * committed before the answer (a STRICT policy's).
     */
    private boolean giveBack(final FrameWork work, final CompiledPolicy policy, final Limit limit, final int keyOffset, final int keyLength,
        final long keyHash, final long lease, final long now)
    {
        final BucketTable.LeaseRelease outcome = table.releaseLease(work.keys, keyOffset, keyLength, keyHash, limit, lease, now, verdict);
        if (!limit.leases())
        {
            return false;
        }
        counters.increment(policy.ordinal(), outcome == BucketTable.LeaseRelease.FREED ? PolicyCounters.RELEASED :
            outcome == BucketTable.LeaseRelease.EXPIRED ? PolicyCounters.RELEASE_EXPIRED : PolicyCounters.RELEASE_UNKNOWN);
        if (log == null || outcome == BucketTable.LeaseRelease.UNKNOWN)
        {
            return false;
        }
        log.appendRelease(work.keys, keyOffset, keyLength, policy.ordinal(), 1, lease, now);
        return policy.strict();
    }

    /** The record names {@code policy}; its limit is the burst of the key that answered ({@code limit}: a share, when split). */
    private static void putRecord(final FrameWork work, final int i, final CompiledPolicy policy, final Limit limit,
        final boolean allowed, final ReasonCode reason, final long remaining, final long retryAfter, final long resetAfter)
    {
        ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), allowed, reason, policy.ordinal(), remaining,
            limit.burstTokens(), retryAfter, resetAfter, policy.version(), policy.windowSeconds());
    }

    /**
     * A request of a regional policy: charged {@link RegionalShares#cost} of the limit as the
     * region counts it, logged with that cost (a replica replays it whatever the share is then), and
     * answered in tokens (remaining and burst divided by what one token takes at this share).
     *
     * @return whether the policy is STRICT (the frame then waits for the commit)
     */
    private boolean decideRegional(final FrameWork work, final int i, final CompiledPolicy policy, final long now)
    {
        final int cost = work.cost[i];
        final long perToken = regional.unitsPerToken(policy);
        final Limit limit = regional.limit(policy, id, shardCount);
        final long units = RegionalShares.cost(cost, perToken, limit);
        hotKeys.decided(work.keys, work.keyOffset[i], work.keyLength[i], work.keyHash[i], cost, now);
        if (units < 0)
        {
            // This region's share cannot hold the request now: refused here, nothing charged or logged.
            ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), false, ReasonCode.RATE_LIMITED,
                policy.ordinal(), 0, 0, REGION_SHARE_RETRY_NANOS, REGION_SHARE_RETRY_NANOS, policy.version(), policy.windowSeconds());
            counters.increment(policy.ordinal(), PolicyCounters.DENIED);
            return false;
        }
        table.acquire(work.keys, work.keyOffset[i], work.keyLength[i], work.keyHash[i], policy.ordinal(), limit, units, now, verdict);
        boolean strict = false;
        if (log != null)
        {
            log.append(work.keys, work.keyOffset[i], work.keyLength[i], policy.ordinal(), (int)units, now);
            strict = policy.strict();
        }
        ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), verdict.allowed(), verdict.reason(),
            policy.ordinal(), verdict.remainingTokens() / perToken, limit.burstTokens() / perToken, verdict.retryAfterNanos(),
            verdict.resetAfterNanos(), policy.version(), policy.windowSeconds());
        counters.increment(policy.ordinal(), verdict.allowed() ? PolicyCounters.ALLOWED : PolicyCounters.DENIED);
        countOverage(policy.ordinal(), verdict.reason(), -1);
        if (policy.routedToAnyShare(shardCount))
        {
            shareDecided(policy.ordinal(), verdict.remainingTokens());
        }
        return strict;
    }

    /**
     * Counts a decision that went into its policy's soft overage, unless {@code counted} (the
     * ordinal this request counted last) is that policy already (owner thread only).
     *
     * @return the ordinal counted last for this request
     */
    private int countOverage(final int ordinal, final ReasonCode reason, final int counted)
    {
        if (reason == ReasonCode.SOFT_OVERAGE && ordinal != counted)
        {
            counters.increment(ordinal, PolicyCounters.OVERAGE);
            return ordinal;
        }
        return counted;
    }

    /**
     * Publishes what this shard's share of a split policy holds after a decision: the whole tokens
     * its tightest limit has left. Owner thread; writes only on a change.
     */
    private void shareDecided(final int ordinal, final long remaining)
    {
        counters.set(ordinal, PolicyCounters.SHARE_TOKENS, Math.max(0, remaining) + 1);
    }

    /**
     * Whole tokens this shard's share of split policy {@code ordinal} held after its last decision
     * (refill since then not counted); {@link Long#MAX_VALUE} before its first. Any thread.
     */
    public long splitShareTokens(final int ordinal)
    {
        final long published = counters.get(ordinal, PolicyCounters.SHARE_TOKENS);
        return published == 0 ? Long.MAX_VALUE : published - 1;
    }

    /** Whether the calling thread owns this shard (its event loop): a frame handed to it is decided inline. */
    public boolean ownedByCallingThread()
    {
        return loop != null && loop.inEventLoop();
    }

    /** Whether this node decides this shard's requests now (it leads the shard's group, or runs alone); any thread. */
    public boolean leads()
    {
        return replication == null || replication.isLeader();
    }

    long shadowAllowed(final int ordinal)
    {
        return counters.get(ordinal, PolicyCounters.SHADOW_ALLOWED);
    }

    long shadowDenied(final int ordinal)
    {
        return counters.get(ordinal, PolicyCounters.SHADOW_DENIED);
    }

    /** Decisions asked of this ordinal on this shard, granted or not (read from any thread: what a region reports as demand). */
    public long asked(final int ordinal)
    {
        return allowed(ordinal) + denied(ordinal);
    }

    long allowed(final int ordinal)
    {
        return counters.get(ordinal, PolicyCounters.ALLOWED);
    }

    long denied(final int ordinal)
    {
        return counters.get(ordinal, PolicyCounters.DENIED);
    }

    /** Releases of this ordinal's concurrency limit that named a lease its key does not hold (nothing freed). */
    long releasesOfUnknownLeases(final int ordinal)
    {
        return counters.get(ordinal, PolicyCounters.RELEASE_UNKNOWN);
    }

    /** Releases of this ordinal's concurrency limit whose lease had expired (nothing more freed). */
    long releasesOfExpiredLeases(final int ordinal)
    {
        return counters.get(ordinal, PolicyCounters.RELEASE_EXPIRED);
    }

    /** Releases that freed a held lease of this ordinal's concurrency limit. */
    long released(final int ordinal)
    {
        return counters.get(ordinal, PolicyCounters.RELEASED);
    }

    /** Decisions under this ordinal allowed beyond its limit, within its soft overage. */
    long overage(final int ordinal)
    {
        return counters.get(ordinal, PolicyCounters.OVERAGE);
    }

    /** Frames waiting for a dedicated shard thread (0 for event-loop shards). */
    int queueDepth()
    {
        return queue == null ? 0 : queue.size();
    }
}
