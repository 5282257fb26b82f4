package dev.limiter.server.engine;

import dev.limiter.server.cluster.DecisionsEntry;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.table.BucketRates;
import dev.limiter.server.table.BucketTable;
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
    private final int[] touched = new int[TOUCH_AHEAD];
    /** What touching read: kept so that the reads are not optimised away (owner thread). */
    private long touchedSum;
    private final BucketTable table;
    /** The busiest keys of this shard (written by the owner thread only). */
    private final HotKeys hotKeys = new HotKeys();
    private final MonotonicClock clock;

    /** Owner when the shard lives on an event loop; null in dedicated-thread mode. */
    private final EventLoop loop;
    /** Dedicated-thread mode only. */
    private final ManyToOneConcurrentArrayQueue<FrameWork> queue;
    /** Dedicated-thread mode only: readers waiting for the shadow comparisons ({@link #shadowComparisons}). */
    private final ManyToOneConcurrentArrayQueue<CompletableFuture<ShadowCompareTable.Snapshot>> compareReaders;
    private final AgentRunner runner;
    private final ShardIdleStrategy idleStrategy;
    private volatile boolean running = true;

    /** Cluster mode only: the replication state and this shard's group commit. */
    private Replication replication;
    private ServerMetrics metrics;
    private ShardLog log;

    /**
     * Counts by policy ordinal, written only by the owner thread: decisions, overage, releases,
     * shadow evaluations, and what this shard's share of a split policy
     * ({@link CompiledPolicy#routedToAnyShare}) held after its last decision, which the frame routers
     * read to send requests to shares that have tokens.
     */
    private final PolicyCounters counters = new PolicyCounters();
    /** What this shard's deciders share, and the decider of each kind of entry. */
    private final ShardContext context;
    private final PlainDecider plain;
    private final StackedDecider stacked;
    private final RegionalDecider regional;
    private final CheckDecider checks;
    private final ShadowDecider shadows;
    private final ReleaseDecider releases;

    /**
     * @param shardCount the node's shards (a stacked GLOBAL budget keeps 1/shardCount of itself here)
     * @param loop       the event loop that owns this shard, or null for a dedicated thread
     */
    public Shard(final int id, final int shardCount, final int maxBuckets, final int keyArenaBytes,
        final MonotonicClock clock, final BucketRates rates, final EventLoop loop)
    {
        this.id = id;
        this.clock = clock;
        this.loop = loop;
        this.table = new BucketTable(maxBuckets, keyArenaBytes, rates, false);
        this.context = new ShardContext(id, shardCount, table, counters, hotKeys);
        this.plain = new PlainDecider(context);
        this.stacked = new StackedDecider(context);
        this.regional = new RegionalDecider(context);
        this.checks = new CheckDecider(context);
        this.shadows = new ShadowDecider(context, clock);
        this.releases = new ReleaseDecider(context);
        if (loop == null)
        {
            this.queue = new ManyToOneConcurrentArrayQueue<>(QUEUE_CAPACITY);
            this.compareReaders = new ManyToOneConcurrentArrayQueue<>(16);
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
            this.compareReaders = null;
            this.idleStrategy = null;
            this.runner = null;
        }
    }

    /** This node belongs to a region: regional policies are decided against its share ({@link RegionalShares}). */
    public void regions(final RegionalShares shares)
    {
        context.regional = shares;
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
        context.log = log;
    }

    /**
     * This shard is done deciding {@code work}: when it is the last of the frame's shards and some shadow was
     * evaluated on another shard than its entry, it compares those shadows (both answers are known now).
     */
    private void comparedAcrossShards(final FrameWork work)
    {
        if (work.crossShardShadows && work.comparesPending.decrementAndGet() == 0 && !work.failed && !work.notLeader &&
            !work.overloaded && !work.release)
        {
            shadows.compareAcrossShards(work);
        }
    }

    /**
     * This shard's shadow comparisons ({@link ShadowCompareTable}), published by its owner thread first so that
     * they count every decision made before the call. Any thread; completes on the owner thread.
     */
    public CompletableFuture<ShadowCompareTable.Snapshot> shadowComparisons()
    {
        final CompletableFuture<ShadowCompareTable.Snapshot> answer = new CompletableFuture<>();
        if (shadows.compares() == null)
        {
            answer.complete(ShadowCompareTable.Snapshot.EMPTY);
        }
        else if (loop != null)
        {
            try
            {
                loop.execute(() -> answer.complete(publishComparisons()));
            }
            catch (final RejectedExecutionException e)
            {
                answer.complete(publishedComparisons()); // stopping
            }
        }
        else if (running && compareReaders.offer(answer))
        {
            idleStrategy.wake();
        }
        else
        {
            answer.complete(publishedComparisons());
        }
        return answer;
    }

    /** Owner thread. */
    private ShadowCompareTable.Snapshot publishComparisons()
    {
        final ShadowCompareTable table = shadows.compares();
        if (table == null)
        {
            return ShadowCompareTable.Snapshot.EMPTY;
        }
        table.publishIfChanged(clock.wallNanos() / 1_000_000L);
        return table.snapshot();
    }

    private ShadowCompareTable.Snapshot publishedComparisons()
    {
        final ShadowCompareTable table = shadows.compares();
        return table == null ? ShadowCompareTable.Snapshot.EMPTY : table.snapshot();
    }

    /** The shadow evaluations of the frame on this shard when it holds nothing else of the frame, else 0. */
    private int shadowsOnly(final FrameWork work)
    {
        for (int i = 0; i < work.count; i++)
        {
            if (work.entries.shard[i] == id)
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
            final int frames = queue.drain(Shard.this::process, FRAMES_PER_CYCLE);
            return compareReaders.isEmpty() ? frames : frames + compareReaders.drain(r -> r.complete(publishComparisons()));
        }

        @Override
        public void onClose()
        {
            running = false;
            compareReaders.drain(r -> r.complete(publishedComparisons()));
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
                comparedAcrossShards(work); // after refusing: a frame this shard refused is compared nowhere
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
                comparedAcrossShards(work);
                work.shardDone();
                return;
            }
            final long now = replication != null ? replication.clusterNanos() : clock.nanoTime();
            // UTC = cluster time + offset, for windows; a logged batch keeps one offset, which replicas replay with.
            table.wallClockOffset(log != null ? log.wallClockOffset(clock.wallNanos() - now) : clock.wallNanos() - now);
            if (work.release)
            {
                strict = releases.release(work, now);
            }
            else
            {
                strict = decideEntries(work, now);
                for (int j = 0; j < work.shadowCount; j++)
                {
                    if (work.shadows.shard[j] == id)
                    {
                        shadows.evaluate(work, j, now);
                    }
                }
            }
        }
        catch (final Throwable e)
        {
            work.failed = true;
            LOG.error("shard {} failed on a frame; the frame is answered with an ERROR", id, e);
        }
        comparedAcrossShards(work);
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
     * Decides this shard's entries of an acquire frame, each by the decider of its kind: a check
     * (cost 0), a stacked request, a regional policy's, or a plain one.
     *
     * @return whether any answer must wait for the commit (STRICT)
     */
    private boolean decideEntries(final FrameWork work, final long now)
    {
        boolean strict = false;
        for (int i = 0; i < work.count; i++)
        {
            if (i % TOUCH_AHEAD == 0)
            {
                touchAhead(work, i, Math.min(work.count, i + TOUCH_AHEAD));
            }
            if (work.entries.shard[i] != id)
            {
                continue;
            }
            if (work.entries.cost[i] == 0)
            {
                checks.check(work, i, now);
            }
            else if (work.stacked && work.stackCount[i] > 0)
            {
                strict |= stacked.decide(work, i, now);
            }
            else if (context.regional(work.entries.policy[i]))
            {
                strict |= regional.decide(work, i, now);
            }
            else
            {
                strict |= plain.decide(work, i, now);
            }
        }
        return strict;
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
            touched[i - from] = work.entries.shard[i] == id ? table.touchSlot(work.entries.keyHash[i]) : -1;
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

    /**
     * Decisions asked of this ordinal on this shard, granted or not (read from any thread: what a region reports as
     * demand).
     */
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
