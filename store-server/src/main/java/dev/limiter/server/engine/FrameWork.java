package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.server.metrics.ServerMetrics;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoop;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.Arrays;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Everything one acquire frame needs on its way through the shards: the decoded entries (keys,
 * hashes, policies, costs), the response buffer the shards fill record by record, and a counter
 * of shards still working. The last shard to finish hands it back to the connection's event loop
 * ({@link #run()}), which completes the answer ({@link FrameAnswer}) and sends it. Pooled per event loop
 * ({@link FramePool}), so a frame costs
 * no allocation beyond its response buffer.
 */
public final class FrameWork implements Runnable
{
    private static final int INITIAL_ENTRIES = 64;

    final AtomicInteger pendingShards = new AtomicInteger();
    /** The shard ({@link KeyColumns#shard}) of an entry answered on the event loop because an exemption covers it. */
    static final int EXEMPT = -1;
    /** The shard of an Envoy request that no policy selects: answered NO_LIMIT on the event loop, no bucket. */
    static final int NO_LIMIT = -2;
    /**
     * The shard of an entry that cannot be decided as sent: answered INVALID_REQUEST on the event
     * loop, {@link #refusals} say why.
     */
    static final int REFUSED = -3;
    /** Why each refused entry was not decided (a frame with none never allocates this). */
    private String[] refusals;
    /** Whether any entry of this frame was refused. */
    boolean anyRefused;
    final UnsafeBuffer keys = new UnsafeBuffer(new byte[INITIAL_ENTRIES * 64]);
    /** The frame's requests, one per entry: each key's bytes, hash, policy, cost and the shard that decides it. */
    final KeyColumns entries = new KeyColumns(INITIAL_ENTRIES, true);
    int count;
    /**
     * SHADOW evaluations of this frame's entries: each spends its own bucket on its shard and is
     * counted, but writes no record (the answer is the enforced policy's).
     */
    final ShadowColumns shadows = new ShadowColumns(INITIAL_ENTRIES);
    int shadowCount;
    /**
     * Whether some shadow is evaluated on another shard than its entry: those are compared by whichever
     * shard finishes deciding last ({@link #comparesPending} reaches 0), once both answers are known.
     */
    boolean crossShardShadows;
    final AtomicInteger comparesPending = new AtomicInteger();
    /**
     * Stacked (hierarchical) scopes and extra limits of this frame's entries: entry i is also
     * charged against parts {@code stackFrom[i] .. stackFrom[i] + stackCount[i] - 1}, all or none.
     * Valid while {@link #stacked}.
     */
    boolean stacked;
    int[] stackFrom = new int[INITIAL_ENTRIES];
    int[] stackCount = new int[INITIAL_ENTRIES];
    /** The stacked parts' keys. */
    final KeyColumns parts = new KeyColumns(0, false);
    int partCount;
    int keyCursor;
    /**
     * A RELEASE: its entry gives back {@link #releasedLease} on every limit that takes leases,
     * instead of acquiring.
     */
    boolean release;
    long releasedLease;
    int releasedCheck;
    /** Per entry: whether its grant took a lease, and the lease's id (the cluster time of the grant). */
    boolean[] leased = new boolean[INITIAL_ENTRIES];
    long[] leaseId = new long[INITIAL_ENTRIES];
    int[] leaseCheck = new int[INITIAL_ENTRIES];
    /**
     * A RELEASE: whether the entry's check matches the limits that lease now (computed by the router before any shard
     * runs).
     */
    boolean[] leaseMatches = new boolean[INITIAL_ENTRIES];
    /** Whether any entry's grant took a lease (the response then carries a lease section). */
    volatile boolean anyLeased;

    /** This frame's decision-id base: record i is decision (idBase, i) ({@link DecisionIds}). */
    long idBase;
    /**
     * The request frame, retained until the answer is sent, and where each entry's tenant and path are
     * in it: what a sampled rejection keeps ({@link RejectedDecisions}). Null for a frame not routed from one.
     */
    ByteBuf request;
    int[] tenantAt = new int[INITIAL_ENTRIES];
    int[] tenantLength = new int[INITIAL_ENTRIES];
    int[] pathAt = new int[INITIAL_ENTRIES];
    int[] pathLength = new int[INITIAL_ENTRIES];

    ChannelHandlerContext ctx;
    FrameResponder connection;
    PolicySetIndex policies;
    ByteBuf response;
    int frameStart;
    long correlationId;
    long startNanos;
    /** Set by a shard that could not decide its entries: the frame is then answered with an ERROR. */
    volatile boolean failed;
    /** Set when this node may not decide (cluster mode): the frame is answered with NOT_LEADER. */
    volatile boolean notLeader;
    /** The shard that refused (its group's leader is the hint), or -1. */
    volatile int notLeaderShard = -1;
    /** Set when the replication log is too far behind to take more decisions now. */
    volatile boolean overloaded;
    /** Shards this frame was handed to (set before any of them sees it). */
    int shardsInFrame;

    private final FramePool pool;
    private final ServerMetrics metrics;
    /** One reusable task per shard, for handing this frame to a shard owned by another event loop. */
    private Runnable[] shardTasks = new Runnable[0];

    FrameWork(final FramePool pool, final ServerMetrics metrics)
    {
        this.pool = pool;
        this.metrics = metrics;
    }

    void reset(final ChannelHandlerContext ctx, final FrameResponder connection, final PolicySetIndex policies,
        final int entries, final long correlationId, final long startNanos)
    {
        this.ctx = ctx;
        this.connection = connection;
        this.correlationId = correlationId;
        this.failed = false;
        this.notLeader = false;
        this.notLeaderShard = -1;
        this.overloaded = false;
        this.shardsInFrame = 0;
        this.policies = policies;
        this.count = 0;
        this.shadowCount = 0;
        this.crossShardShadows = false;
        this.partCount = 0;
        this.stacked = policies.hasStacked() || policies.hasExtraLimits();
        this.keyCursor = 0;
        this.startNanos = startNanos;
        this.release = false;
        this.idBase = pool.idBases.next();
        if (anyLeased)
        {
            // Only a frame that took a lease set these flags: the others cost no clearing.
            Arrays.fill(leased, false);
            Arrays.fill(shadows.leased, false);
        }
        this.anyLeased = false;
        this.anyRefused = false;
        if (this.entries.capacity() < entries)
        {
            final int n = Integer.highestOneBit(entries - 1) << 1;
            this.entries.ensure(n);
            leased = new boolean[n];
            leaseId = new long[n];
            leaseCheck = new int[n];
            leaseMatches = new boolean[n];
            tenantAt = new int[n];
            tenantLength = new int[n];
            pathAt = new int[n];
            pathLength = new int[n];
        }
        if (stacked && (stackFrom.length < entries
            || parts.capacity() < entries * PolicySetIndex.MAX_PARTS_PER_REQUEST))
        {
            final int n = Math.max(INITIAL_ENTRIES, Integer.highestOneBit(Math.max(2, entries) - 1) << 1);
            stackFrom = new int[Math.max(n, stackFrom.length)];
            stackCount = new int[Math.max(n, stackCount.length)];
            parts.ensure(n * PolicySetIndex.MAX_PARTS_PER_REQUEST);
        }
        if (policies.hasShadow() && shadows.capacity() < entries)
        {
            shadows.ensure(Integer.highestOneBit(entries - 1) << 1);
        }
    }

    /** Room for a key of up to {@code length} bytes at {@link #keyCursor}. */
    void ensureKeyRoom(final int length)
    {
        if (keyCursor + length > keys.capacity())
        {
            final byte[] bigger = new byte[Math.max(keys.capacity() * 2, keyCursor + length)];
            keys.getBytes(0, bigger, 0, keyCursor);
            keys.wrap(bigger);
        }
    }

    /** A task that runs this frame on {@code shard}'s owner; allocated once per shard per pooled frame. */
    Runnable taskFor(final Shard shard)
    {
        if (shard.id() >= shardTasks.length)
        {
            shardTasks = Arrays.copyOf(shardTasks, shard.id() + 1);
        }
        Runnable task = shardTasks[shard.id()];
        if (task == null)
        {
            task = () -> shard.process(this);
            shardTasks[shard.id()] = task;
        }
        return task;
    }

    /** Called by each shard when its entries are done; the last one completes the frame. */
    void shardDone()
    {
        shardsDone(1);
    }

    /** Counts {@code n} shards as finished (or abandoned); the last one completes the frame. */
    void shardsDone(final int n)
    {
        if (pendingShards.addAndGet(-n) != 0)
        {
            return;
        }
        final EventLoop home = ctx.channel().eventLoop();
        if (home.inEventLoop())
        {
            run();
            return;
        }
        try
        {
            home.execute(this);
        }
        catch (final RejectedExecutionException e)
        {
            // The event loop is shutting down: nobody will read this response.
            response.release();
            if (request != null)
            {
                request.release();
                request = null;
            }
        }
    }

    /**
     * Entry {@code i} (already counted) cannot be decided as it was sent: it is answered
     * INVALID_REQUEST naming {@code named}, with {@code why}, and no shard decides it. The frame's
     * other entries are decided as usual. Router thread.
     */
    void refuse(final int i, final CompiledPolicy named, final String why)
    {
        if (refusals == null || refusals.length < entries.capacity())
        {
            refusals = new String[entries.capacity()];
        }
        refusals[i] = why;
        entries.policy[i] = named;
        entries.shard[i] = REFUSED;
        anyRefused = true;
    }

    /** Why refused entry {@code i} was not decided; forgets it (the answer's refusal section is its only reader). */
    String takeRefusal(final int i)
    {
        final String why = refusals[i];
        refusals[i] = null;
        return why;
    }

    /** {@code shard} may not decide here now: the frame is answered NOT_LEADER, naming that shard's leader. */
    void refuseNotLeader(final int shard)
    {
        notLeaderShard = shard;
        notLeader = true;
    }

    /** Completes the response on the connection's event loop once every shard has filled its records. */
    @Override
    public void run()
    {
        try
        {
            if (overloaded && !failed && !notLeader)
            {
                response.release();
                connection.error(ctx, correlationId, ErrorCode.OVERLOADED,
                    "the replication log is behind; nothing in this frame was decided; retry after a short backoff");
            }
            else if (notLeader && !failed)
            {
                response.release();
                connection.notLeader(ctx, correlationId, notLeaderShard);
            }
            else if (failed)
            {
                // Never send records a shard did not fill: the caller must not read them as answers.
                response.release();
                connection.error(ctx, correlationId, ErrorCode.INTERNAL,
                    "the node failed while deciding this frame; no entry in it was answered (see the node's log)");
            }
            else if (ctx.channel().isActive())
            {
                FrameAnswer.finish(this, pool, connection.wantsDecisionIds());
                ctx.writeAndFlush(response, ctx.voidPromise());
            }
            else
            {
                response.release();
            }
            metrics.recordFrameLatency(System.nanoTime() - startNanos);
        }
        finally
        {
            response = null;
            connection.frameCompleted(ctx);
            recycle();
        }
    }

    void recycle()
    {
        if (request != null)
        {
            request.release();
            request = null;
        }
        ctx = null;
        connection = null;
        policies = null;
        entries.clear(count);
        shadows.clear(shadowCount);
        parts.clear(partCount);
        pool.release(this);
    }


}
