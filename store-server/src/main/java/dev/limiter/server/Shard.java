package dev.limiter.server;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.Decision;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * One shard: a bucket table and the single thread that owns it. Event loops hand it frames through
 * a bounded many-to-one queue; it decides every entry that belongs to it, writes the result
 * records in place, and passes the frame on when it is the last shard to finish. No locks.
 */
final class Shard implements Runnable
{
    private static final Logger LOG = LoggerFactory.getLogger(Shard.class);
    private static final int QUEUE_CAPACITY = 4096;
    private static final int SPINS_BEFORE_PARK = 200;
    private static final long MAX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final int id;
    private final BucketTable table;
    private final MonotonicClock clock;
    private final ManyToOneConcurrentArrayQueue<FrameWork> queue = new ManyToOneConcurrentArrayQueue<>(QUEUE_CAPACITY);
    private final Decision decision = new Decision();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile boolean sleeping;

    /** Decisions by policy ordinal, allowed and denied; written only by this shard's thread. */
    private final AtomicLongArray allowedByPolicy;
    private final AtomicLongArray deniedByPolicy;

    Shard(final int id, final ServerConfig config, final MonotonicClock clock, final Supplier<PolicySetIndex> policies)
    {
        this.id = id;
        this.clock = clock;
        final PolicySetIndex initial = policies.get();
        this.table = new BucketTable(config.maxBucketsPerShard(), config.keyArenaBytesPerShard(),
            ordinal -> policies.get().policy(ordinal).rate());
        this.allowedByPolicy = new AtomicLongArray(initial.size());
        this.deniedByPolicy = new AtomicLongArray(initial.size());
        this.thread = new Thread(this, "limiter-shard-" + id);
        this.thread.setDaemon(true);
    }

    void start()
    {
        thread.start();
    }

    /** Queues a frame for this shard; spins (back-pressure on the event loop) while the queue is full. */
    void submit(final FrameWork work)
    {
        while (!queue.offer(work))
        {
            if (!running)
            {
                throw new RejectedExecutionException("shard " + id + " is stopped");
            }
            Thread.onSpinWait();
        }
        if (sleeping)
        {
            LockSupport.unpark(thread);
        }
    }

    @Override
    public void run()
    {
        int idle = 0;
        while (running)
        {
            final FrameWork work = queue.poll();
            if (work != null)
            {
                idle = 0;
                process(work);
                continue;
            }
            if (++idle < SPINS_BEFORE_PARK)
            {
                Thread.onSpinWait();
                continue;
            }
            sleeping = true;
            if (queue.isEmpty() && running)
            {
                LockSupport.parkNanos(this, MAX_PARK_NANOS);
            }
            sleeping = false;
        }
        // Fail whatever is still queued rather than leave connections waiting forever.
        FrameWork leftover;
        while ((leftover = queue.poll()) != null)
        {
            finish(leftover);
        }
    }

    private void process(final FrameWork work)
    {
        try
        {
            final long now = clock.nanoTime();
            for (int i = 0; i < work.count; i++)
            {
                if (work.shard[i] != id)
                {
                    continue;
                }
                final CompiledPolicy policy = work.policy[i];
                table.acquire(work.keys, work.keyOffset[i], work.keyLength[i], work.keyHash[i], policy.ordinal(),
                    policy.rate(), work.cost[i], now, decision);
                ResultCodec.putRecord(work.response, ResultCodec.recordOffset(work.frameStart, i), decision.allowed(),
                    decision.reason(), policy.ordinal(), decision.remainingTokens(), policy.rate().burstTokens(),
                    decision.retryAfterNanos(), decision.resetAfterNanos(), policy.version(), policy.windowSeconds());
                final AtomicLongArray counter = decision.allowed() ? allowedByPolicy : deniedByPolicy;
                if (policy.ordinal() < counter.length())
                {
                    counter.lazySet(policy.ordinal(), counter.get(policy.ordinal()) + 1);
                }
            }
        }
        catch (final RuntimeException e)
        {
            LOG.error("shard {} failed on a frame; its records are left as zeros (denied)", id, e);
        }
        finish(work);
    }

    private void finish(final FrameWork work)
    {
        if (work.pendingShards.decrementAndGet() == 0)
        {
            try
            {
                work.ctx.channel().eventLoop().execute(work);
            }
            catch (final RejectedExecutionException e)
            {
                // The event loop is shutting down: nobody will read this response.
                work.response.release();
            }
        }
    }

    void stop()
    {
        running = false;
        LockSupport.unpark(thread);
        try
        {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    int id()
    {
        return id;
    }

    BucketTable table()
    {
        return table;
    }

    long allowed(final int ordinal)
    {
        return ordinal < allowedByPolicy.length() ? allowedByPolicy.get(ordinal) : 0;
    }

    long denied(final int ordinal)
    {
        return ordinal < deniedByPolicy.length() ? deniedByPolicy.get(ordinal) : 0;
    }

    int queueDepth()
    {
        return queue.size();
    }
}
