package dev.limiter.client;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.FleetCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PoliciesCodec;
import dev.limiter.protocol.ShardMap;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultDecoder;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.concurrent.FastThreadLocal;
import io.netty.util.concurrent.ScheduledFuture;
import io.netty.util.internal.PlatformDependent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import javax.net.ssl.SSLParameters;

/**
 * One TCP connection to a store node. Callers on any thread enqueue calls; the connection's event
 * loop drains the queue into as few BATCH_ACQUIRE frames as possible (concurrent calls share a
 * frame and a syscall), keeps every frame in flight by correlation id, answers calls from result
 * frames, fails them on their deadline, and reconnects with jittered backoff when the link drops.
 * Everything but {@link #submit} runs on the event loop.
 * <p>
 * Longer than the house's 500 lines because everything that touches the in-flight table (batching,
 * answers, NOT_LEADER returns, reconnects, keep-alive, the policy subscription) runs on the one
 * event loop that owns it; split apart, each piece would need that table's thread rules again.
 */
final class Connection
{
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);
    private static final long MIN_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(2);
    private static final int MAX_RESPONSE_FRAME_BYTES = 16 << 20;
    /** How often a frame past its earliest deadline looks whether its calls are settled yet. */
    private static final long SETTLE_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    /**
     * The connection whose answers this I/O thread is handing to callers right now, else null: a
     * call made from such an answer's callback goes back on the same connection, or, for another
     * node, on that node's first connection on this thread (see {@link ConnectionSet#open}), so
     * chained calls share frames.
     */
    private static final FastThreadLocal<Connection> ANSWERING = new FastThreadLocal<>();

    private final InetSocketAddress address;
    private final EventLoop loop;
    private final int maxBatch;
    private final int maxFrameBytes;
    private final Rerouter rerouter;
    private final String hostPort;
    /** Set once by the {@link ConnectionSet} that takes this connection, before any call is made. */
    private volatile ConnectionSet owner;
    /** Told every shard map a node sends (on this connection's I/O thread). */
    private final Consumer<ShardMap> shardMaps;
    /** Told of every call whose answer says its key is hot (the node flags it for token leases with a hotRate). */
    private final Consumer<Descriptor> hotKeys;
    private final Class<? extends Channel> channelType;
    private final long connectTimeoutMillis;
    private final Queue<PendingCall> queue = PlatformDependent.newMpscQueue();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Runnable drain = this::drainQueue;
    private final LongObjectHashMap<InFlight> inFlight = new LongObjectHashMap<>();
    /**
     * One timer per connection drops frames past their deadlines, instead of one per frame (a
     * scheduled task per frame cost a priority-queue insert and removal on the I/O thread for
     * every frame). Event loop only; null when none is scheduled.
     */
    private ScheduledFuture<?> sweep;
    /** When {@link #sweep} runs. */
    private long sweepAtNanos;
    private final Runnable sweepTask = this::sweepFrames;
    private final ResultDecoder decoder = new ResultDecoder();
    private final PolicyIdCache policyIds = new PolicyIdCache();
    private final List<Runnable> connectWaiters = new ArrayList<>();
    /** Null when this client does not follow policies. */
    private final PolicyCache policies;
    private final long policyRefreshNanos;
    private ScheduledFuture<?> policyRefresh;
    private ScheduledFuture<?> keepAlive;
    /**
     * When this connection's I/O thread last came round to a stamp the deadline timer asked for:
     * it had read whatever had arrived before then. The timer waits for it before taking a missing
     * answer for the store's. Stamped on demand (an idle client wakes no thread).
     */
    private volatile long loopRanNanos = System.nanoTime();
    private final AtomicBoolean stampAsked = new AtomicBoolean();
    private final Runnable stamp = () ->
    {
        loopRanNanos = System.nanoTime();
        stampAsked.set(false);
    };
    /** Frames written so far (event loop only): the keep-alive pings only a connection that wrote none lately. */
    private long framesWritten;
    private long framesWrittenAtLastKeepAlive;
    /** TLS to the node, or null for plain TCP. */
    private final SslContext tls;
    /** A connection that wrote nothing for this long sends a PING (a node closes silent connections). */
    private final long keepAliveNanos;
    private long nextCorrelationId = 1;
    private int reconnectAttempt;
    private volatile Channel channel;
    private volatile boolean active;
    private volatile boolean closed;
    private volatile String lastError = "not connected yet";
    /** This SDK instance, as the node counts it for FLEET. */
    private final byte[] instanceId;
    /** SDK instances the node last reported (FLEET), 0 before any report; kept through an outage. */
    private volatile int fleetInstances;
    /** False once the node refused the subscription with an instance id (it predates FLEET); true again on reconnecting. Event loop only. */
    private boolean countedForFleet = true;

    /** A frame on the wire: the calls it carries, in entry order. */
    private final class InFlight
    {
        final long correlationId;
        final PendingCall[] calls;
        final CompletableFuture<Void> ping;
        /** When the sweep looks at this frame next (its earliest deadline, then every settle check). */
        long dueNanos;

        InFlight(final long correlationId, final PendingCall[] calls, final CompletableFuture<Void> ping)
        {
            this.correlationId = correlationId;
            this.calls = calls;
            this.ping = ping;
        }

        /**
         * Housekeeping only, at {@link #dueNanos}: the SDK's deadline timer ends calls at their
         * deadlines (whatever this thread is doing); this fails a ping and tells whether every call
         * is settled, so the frame can be dropped.
         */
        boolean settledWhenDue()
        {
            if (ping != null && !ping.isDone())
            {
                ping.completeExceptionally(new LimiterTimeoutException("no answer from " + address + " within the deadline"));
            }
            for (final PendingCall call : calls)
            {
                if (!call.isDone())
                {
                    return false;
                }
            }
            return true;
        }

        void fail(final Throwable cause)
        {
            for (final PendingCall call : calls)
            {
                call.completeExceptionally(cause);
            }
            if (ping != null)
            {
                ping.completeExceptionally(cause);
            }
        }
    }

    /** Where calls go that a node refused without deciding them. */
    interface Rerouter
    {
        /** A node does not lead. @param leaderHint the leader's {@code host:port} as the node told it, or "" when unknown */
        void reroute(Connection from, PendingCall[] calls, String leaderHint);

        /** A node decided nothing in the frame because its replication log is behind ({@code OVERLOADED}). */
        void retryLater(Connection from, PendingCall[] calls, String why);
    }

    Connection(final InetSocketAddress address, final EventLoop loop, final int maxBatch, final int maxFrameBytes,
        final long connectTimeoutMillis, final Class<? extends Channel> channelType, final Rerouter rerouter,
        final PolicyCache policies, final long policyRefreshNanos, final String instanceId, final SslContext tls,
        final long keepAliveNanos, final Consumer<ShardMap> shardMaps, final Consumer<Descriptor> hotKeys)
    {
        this.shardMaps = shardMaps;
        this.hotKeys = hotKeys;
        this.tls = tls;
        this.keepAliveNanos = keepAliveNanos;
        this.instanceId = instanceId.getBytes(StandardCharsets.UTF_8);
        if (this.instanceId.length < 1 || this.instanceId.length > PoliciesCodec.MAX_INSTANCE_ID_BYTES)
        {
            throw new IllegalArgumentException("instance id must be 1 to " + PoliciesCodec.MAX_INSTANCE_ID_BYTES + " bytes of UTF-8, was " +
                this.instanceId.length);
        }
        this.policies = policies;
        this.policyRefreshNanos = policyRefreshNanos;
        this.rerouter = rerouter;
        this.maxFrameBytes = maxFrameBytes;
        this.channelType = channelType;
        this.address = address;
        this.hostPort = address.getHostString() + ":" + address.getPort(); // compared on every routed call: made once
        this.loop = loop;
        this.maxBatch = maxBatch;
        this.connectTimeoutMillis = connectTimeoutMillis;
    }

    /**
     * Whether this connection's I/O thread has come round to its tasks since {@code sinceNanos}
     * (having read what had arrived by then). When that is not known yet, asks it to say so, for a
     * later look: a free thread answers within microseconds, a stalled one does not. Any thread.
     */
    boolean loopRanSince(final long sinceNanos)
    {
        if (loopRanNanos - sinceNanos >= 0)
        {
            return true;
        }
        if (stampAsked.compareAndSet(false, true))
        {
            try
            {
                loop.execute(stamp);
            }
            catch (final RejectedExecutionException closed)
            {
                stampAsked.set(false);
                return true; // no thread will read anything more: nothing to wait for
            }
        }
        return false;
    }

    InetSocketAddress address()
    {
        return address;
    }

    /**
     * The connection whose answers the calling thread is handing out now (in their callbacks), else
     * null. No lookup structure is made for a thread that never answered (an application's).
     */
    static Connection answeringOnThisThread()
    {
        return ANSWERING.getIfExists();
    }

    /** The rest of the calls made in this thread's current answer's callbacks go on {@code next}. */
    static void followOnCallsTo(final Connection next)
    {
        ANSWERING.set(next);
    }

    /** The set this connection belongs to (one per client): another client's calls never take it. */
    ConnectionSet owner()
    {
        return owner;
    }

    void owner(final ConnectionSet set)
    {
        owner = set;
    }

    /** {@code host:port} as nodes name each other in NOT_LEADER hints and shard maps. */
    String hostPort()
    {
        return hostPort;
    }

    EventLoop loop()
    {
        return loop;
    }

    /** Cheap enough to ask on every call (a volatile read, no syscall state lookup). */
    boolean isActive()
    {
        return active;
    }

    String lastError()
    {
        return lastError;
    }

    int fleetInstances()
    {
        return fleetInstances;
    }

    /** Starts connecting; {@code onFirstAttempt} runs when the first attempt succeeds or fails. */
    void connect(final Runnable onFirstAttempt)
    {
        loop.execute(() ->
        {
            connectWaiters.add(onFirstAttempt);
            doConnect();
        });
    }

    private void doConnect()
    {
        if (closed)
        {
            return;
        }
        final Bootstrap bootstrap = new Bootstrap()
            .group(loop)
            .channel(channelType)
            .option(ChannelOption.TCP_NODELAY, true)
            .option(ChannelOption.SO_KEEPALIVE, true)
            .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int)connectTimeoutMillis)
            .handler(new ChannelInitializer<Channel>()
            {
                @Override
                protected void initChannel(final Channel ch)
                {
                    if (tls != null)
                    {
                        ch.pipeline().addLast(tlsHandler(ch));
                    }
                    ch.pipeline()
                        .addLast(new LengthFieldBasedFrameDecoder(MAX_RESPONSE_FRAME_BYTES, 0, Frame.LENGTH_FIELD_LENGTH, 0, 0, true))
                        .addLast(new Handler());
                }
            });
        final ChannelFuture future = bootstrap.connect(address);
        future.addListener(f ->
        {
            if (f.isSuccess())
            {
                channel = future.channel();
                active = true;
                lastError = "none";
                countedForFleet = true; // a new connection may reach an upgraded node: offer the instance id again
                if (closed)
                {
                    channel.close();
                }
                else
                {
                    if (policies != null)
                    {
                        subscribePolicies(channel);
                    }
                    askShardMap(channel);
                }
                if (keepAlive == null)
                {
                    keepAlive = loop.scheduleWithFixedDelay(this::keepAlive, keepAliveNanos, keepAliveNanos, TimeUnit.NANOSECONDS);
                }
                else if (!queue.isEmpty())
                {
                    drainQueue();
                }
            }
            else
            {
                lastError = String.valueOf(f.cause().getMessage());
                scheduleReconnect();
            }
            connectWaiters.forEach(Runnable::run);
            connectWaiters.clear();
        });
    }

    /** The node's certificate must be trusted and must name the address this connection was given. */
    private SslHandler tlsHandler(final Channel ch)
    {
        final SslHandler handler = tls.newHandler(ch.alloc(), address.getHostString(), address.getPort());
        final SSLParameters parameters = handler.engine().getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        handler.engine().setSSLParameters(parameters);
        handler.handshakeFuture().addListener(done ->
        {
            if (!done.isSuccess())
            {
                lastError = "TLS handshake with " + hostPort() + " failed: " + done.cause().getMessage();
                LOG.warn("TLS handshake with {} failed: {}", hostPort(), done.cause().toString());
            }
        });
        return handler;
    }

    /** Every {@link #keepAliveNanos}: a PING if nothing was written since the last look. Event loop. */
    private void keepAlive()
    {
        final Channel ch = channel;
        if (ch == null || !active || closed)
        {
            return;
        }
        if (framesWritten == framesWrittenAtLastKeepAlive)
        {
            ping(System.nanoTime() + keepAliveNanos).exceptionally(ignored -> null); // its answer is not awaited
        }
        framesWrittenAtLastKeepAlive = framesWritten;
    }

    /**
     * Asks for the policy set and for every later one; asked again now and then so that the cache
     * knows a node still stands behind it (its TTL counts from the last answer).
     */
    private void subscribePolicies(final Channel ch)
    {
        final ByteBuf request = ch.alloc().buffer(Frame.HEADER_LENGTH + 2 + instanceId.length);
        // Subscribe, and have this instance counted for FLEET unless the node is from before FLEET.
        PoliciesCodec.writeRequest(request, 0, true, countedForFleet ? instanceId : null);
        ch.writeAndFlush(request, ch.voidPromise());
        framesWritten++;
        if (policyRefresh == null)
        {
            policyRefresh = loop.scheduleWithFixedDelay(() ->
            {
                final Channel current = channel;
                if (current != null && active && !closed)
                {
                    subscribePolicies(current);
                }
            }, policyRefreshNanos, policyRefreshNanos, TimeUnit.NANOSECONDS);
        }
    }

    /** Asks the node which node leads each shard (answered with correlation id 0). Any thread. */
    void requestShardMap()
    {
        loop.execute(() ->
        {
            final Channel ch = channel;
            if (ch != null && active && !closed)
            {
                askShardMap(ch);
            }
        });
    }

    private void askShardMap(final Channel ch)
    {
        final ByteBuf request = ch.alloc().buffer(Frame.HEADER_LENGTH);
        Frame.finish(request, Frame.begin(request, MessageType.SHARD_MAP, 0));
        ch.writeAndFlush(request, ch.voidPromise());
        framesWritten++;
    }

    private void scheduleReconnect()
    {
        if (closed)
        {
            return;
        }
        final long backoff = Math.min(MAX_BACKOFF_NANOS, MIN_BACKOFF_NANOS << Math.min(reconnectAttempt++, 10));
        final long jittered = backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1);
        loop.schedule(this::doConnect, jittered, TimeUnit.NANOSECONDS);
    }

    /** Queues a call from any thread; the event loop batches and sends it. */
    void submit(final PendingCall call)
    {
        call.connection = this;
        queue.offer(call);
        if (drainScheduled.compareAndSet(false, true))
        {
            try
            {
                loop.execute(drain);
            }
            catch (final RejectedExecutionException e)
            {
                // The client is closing: fail what is queued instead of throwing at the caller.
                drainScheduled.set(false);
                PendingCall queued;
                while ((queued = queue.poll()) != null)
                {
                    queued.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
                }
            }
        }
    }

    CompletableFuture<Void> ping(final long deadlineNanos)
    {
        return request(MessageType.PING, null, deadlineNanos);
    }

    /**
     * A request answered by an empty frame (PONG, DEGRADED_REPORT_RESULT), a RESULT with one
     * RELEASED record (RELEASE) or an ERROR, within the deadline.
     */
    CompletableFuture<Void> request(final int type, final byte[] body, final long deadlineNanos)
    {
        final CompletableFuture<Void> result = new CompletableFuture<>();
        loop.execute(() ->
        {
            final Channel ch = channel;
            if (ch == null || !ch.isActive())
            {
                result.completeExceptionally(unavailable());
                return;
            }
            final long correlationId = nextCorrelationId++;
            final InFlight frame = new InFlight(correlationId, new PendingCall[0], result);
            track(frame, deadlineNanos);
            final ByteBuf buf = ch.alloc().buffer(Frame.HEADER_LENGTH + (body == null ? 0 : body.length));
            final int start = Frame.begin(buf, type, correlationId);
            if (body != null)
            {
                buf.writeBytes(body);
            }
            Frame.finish(buf, start);
            ch.writeAndFlush(buf, ch.voidPromise());
            framesWritten++;
        });
        return result;
    }

    private void drainQueue()
    {
        drainScheduled.set(false);
        final Channel ch = channel;
        if (ch == null || !ch.isActive())
        {
            PendingCall call;
            while ((call = queue.poll()) != null)
            {
                call.completeExceptionally(unavailable());
            }
            return;
        }
        PendingCall call = queue.poll();
        boolean wrote = false;
        while (call != null)
        {
            final PendingCall[] batch = new PendingCall[Math.min(maxBatch, queue.size() + 1)];
            int count = 0;
            final ByteBuf buf = ch.alloc().directBuffer(64 + batch.length * 48);
            final long correlationId = nextCorrelationId++;
            final int frameStart = AcquireCodec.beginBatch(buf, MessageType.BATCH_ACQUIRE, correlationId);
            long earliestDeadline = 0;
            final long now = System.nanoTime();
            while (call != null && count < batch.length)
            {
                if (count > 0 && buf.writerIndex() - frameStart + 4 + call.descriptor.encoded().length > maxFrameBytes)
                {
                    break; // this call starts the next frame: the node would refuse a larger one
                }
                // A call past its deadline but not yet ended is still sent: the deadline timer ends
                // it, and after a pause of this process it waits a little for the answer.
                if (!call.isDone())
                {
                    AcquireCodec.appendEntry(buf, call.wireCost, call.descriptor.encoded());
                    batch[count++] = call;
                    if (call.deadlineNanos - earliestDeadline < 0 || count == 1)
                    {
                        earliestDeadline = call.deadlineNanos; // compared as differences: nanoTime may wrap
                    }
                }
                call = queue.poll();
            }
            if (count == 0)
            {
                buf.release();
                continue;
            }
            AcquireCodec.finishBatch(buf, frameStart, count);
            if (count == 1)
            {
                buf.setByte(frameStart + Frame.TYPE_OFFSET, MessageType.ACQUIRE);
            }
            final InFlight frame = new InFlight(correlationId,
                count == batch.length ? batch : Arrays.copyOf(batch, count), null);
            track(frame, earliestDeadline);
            ch.write(buf, ch.voidPromise());
            framesWritten++;
            wrote = true;
        }
        if (wrote)
        {
            ch.flush();
        }
    }

    /** Frames sent and neither answered nor dropped yet (read on the I/O thread; for tests). */
    int framesAwaitingAnswer()
    {
        return CompletableFuture.supplyAsync(inFlight::size, loop).join();
    }

    /** Holds {@code frame} until its answer, and has the sweep look at it by {@code dueNanos}. Event loop only. */
    private void track(final InFlight frame, final long dueNanos)
    {
        frame.dueNanos = dueNanos;
        inFlight.put(frame.correlationId, frame);
        if (sweep == null || dueNanos - sweepAtNanos < 0)
        {
            scheduleSweep(dueNanos, System.nanoTime());
        }
    }

    private void scheduleSweep(final long atNanos, final long nowNanos)
    {
        if (sweep != null)
        {
            sweep.cancel(false);
        }
        sweepAtNanos = atNanos;
        sweep = loop.schedule(sweepTask, Math.max(0, atNanos - nowNanos), TimeUnit.NANOSECONDS);
    }

    /** Drops the frames due by now whose calls are all settled; runs again when the next frame is due. */
    private void sweepFrames()
    {
        sweep = null;
        final long now = System.nanoTime();
        List<InFlight> settled = null;
        long next = 0;
        boolean pending = false;
        for (final InFlight frame : inFlight.values())
        {
            if (frame.dueNanos - now <= 0)
            {
                if (frame.settledWhenDue())
                {
                    if (settled == null)
                    {
                        settled = new ArrayList<>();
                    }
                    settled.add(frame);
                    continue;
                }
                frame.dueNanos = now + SETTLE_CHECK_NANOS;
            }
            if (!pending || frame.dueNanos - next < 0)
            {
                next = frame.dueNanos;
                pending = true;
            }
        }
        if (settled != null)
        {
            for (final InFlight frame : settled)
            {
                inFlight.remove(frame.correlationId);
            }
        }
        if (pending)
        {
            scheduleSweep(next, now);
        }
    }

    private LimiterTimeoutException timeout(final PendingCall call)
    {
        return new LimiterTimeoutException("no answer from limiter " + address.getHostString() + ":" + address.getPort() +
            " within the call's deadline");
    }

    private LimiterUnavailableException unavailable()
    {
        return new LimiterUnavailableException("not connected to limiter " + address.getHostString() + ":" +
            address.getPort() + " (reconnecting; last error: " + lastError + ")");
    }

    private void onResult(final ByteBuf frame, final long correlationId)
    {
        reconnectAttempt = 0; // the node answers: a later drop starts the backoff from the beginning
        final InFlight entry = inFlight.remove(correlationId);
        if (entry == null)
        {
            return; // answered after its deadline: the caller was already told
        }
        final String malformed = decoder.wrap(frame, Frame.bodyOffset(frame), Frame.frameEnd(frame));
        if (entry.ping != null)
        {
            // A RELEASE: its answer is one RELEASED record.
            if (malformed != null || decoder.count() != 1 || decoder.reasonCode(0) != ReasonCode.RELEASED.code())
            {
                entry.ping.completeExceptionally(new LimiterException("malformed answer to a release from " + address + ": " +
                    (malformed != null ? malformed : decoder.count() + " records, reason " + decoder.reasonCode(0))));
            }
            else
            {
                entry.ping.complete(null);
            }
            return;
        }
        if (malformed != null || decoder.count() != entry.calls.length)
        {
            entry.fail(new LimiterException("malformed answer from " + address + ": " +
                (malformed != null ? malformed : decoder.count() + " results for " + entry.calls.length + " requests")));
            return;
        }
        final Connection outer = ANSWERING.getIfExists();
        ANSWERING.set(this);
        try
        {
            answer(entry);
        }
        finally
        {
            ANSWERING.set(outer);
        }
    }

    private void answer(final InFlight entry)
    {
        for (int i = 0; i < entry.calls.length; i++)
        {
            final int reason = decoder.reasonCode(i);
            if (reason == ReasonCode.INVALID_REQUEST.code())
            {
                // This call alone could not be decided as sent (the frame's others were): as the node's refusal of a whole frame was.
                final String why = decoder.refusal(i);
                entry.calls[i].completeExceptionally(new LimiterRequestException(ErrorCode.INVALID_DESCRIPTOR,
                    why == null ? "the node could not decide this request as it was sent" : why));
                continue;
            }
            final boolean allowed = decoder.allowed(i);
            // A code from a newer node is read by its allowed flag rather than failing the call.
            final Decision answer = new Decision(
                allowed,
                ReasonCode.known(reason) ? ReasonCode.of(reason) : allowed ? ReasonCode.ALLOWED : ReasonCode.RATE_LIMITED,
                decoder.remaining(i),
                decoder.limit(i),
                decoder.retryAfterNanos(i),
                decoder.resetAfterNanos(i),
                policyIds.resolve(decoder, decoder.policyRef(i)),
                decoder.policyVersion(i),
                decoder.windowSeconds(i));
            if (decoder.hotKey(i))
            {
                hotKeys.accept(entry.calls[i].descriptor); // before the caller sees the answer: its next call may lease
            }
            entry.calls[i].complete(decoder.holdsLease(i) ? answer.withLease(decoder.leaseId(i), decoder.leaseCheck(i)) : answer);
        }
    }

    private void onError(final ByteBuf frame, final long correlationId)
    {
        final int body = Frame.bodyOffset(frame);
        final int end = Frame.frameEnd(frame);
        final ErrorCode code = end - body >= 2 ? ErrorCode.ofOrNull(ErrorCodec.code(frame, body)) : null;
        final String message = ErrorCodec.message(frame, body, end);
        final InFlight entry = inFlight.remove(correlationId);
        if (entry != null && code == ErrorCode.NOT_LEADER && entry.ping == null)
        {
            // The node did not answer these calls (a STRICT batch it could not confirm may still have
            // charged tokens: a retry can only under-admit): they go to the leader, within their deadlines.
            reconnectAttempt = 0;
            rerouter.reroute(this, entry.calls, message);
        }
        else if (entry != null && code == ErrorCode.OVERLOADED && entry.ping == null)
        {
            // Nothing in the frame was decided: the calls are sent again after a backoff, within their deadlines.
            rerouter.retryLater(this, entry.calls, message);
        }
        else if (entry != null)
        {
            entry.fail(new LimiterRequestException(code, message));
        }
        else if (correlationId != 0 && (code == ErrorCode.NOT_LEADER || code == ErrorCode.OVERLOADED))
        {
            // A late refusal of a frame whose calls this SDK already settled (their deadline passed):
            // nothing to do, and during a failover there are thousands of them.
            LOG.debug("limiter {} reported {} for a frame no longer waited for: {}", address, code, message);
        }
        else
        {
            LOG.warn("limiter {} reported {}: {}", address, code, message);
        }
    }

    private void failAll(final Throwable cause)
    {
        final List<InFlight> entries = new ArrayList<>(inFlight.values());
        inFlight.clear();
        entries.forEach(e -> e.fail(cause));
        PendingCall call;
        while ((call = queue.poll()) != null)
        {
            call.completeExceptionally(cause);
        }
    }

    void close()
    {
        closed = true;
        loop.execute(() ->
        {
            if (policyRefresh != null)
            {
                policyRefresh.cancel(false);
            }
            if (keepAlive != null)
            {
                keepAlive.cancel(false);
            }
            final Channel ch = channel;
            active = false;
            if (ch != null)
            {
                ch.close();
            }
            failAll(new LimiterUnavailableException("limiter client closed"));
            connectWaiters.forEach(Runnable::run);
            connectWaiters.clear();
        });
    }

    /** An ERROR saying the node does not serve a request type (an older node, asked for a shard map). */
    private static boolean isUnknownType(final ByteBuf frame)
    {
        return Frame.frameEnd(frame) - Frame.bodyOffset(frame) >= 2 &&
            frame.getUnsignedShort(Frame.bodyOffset(frame)) == ErrorCode.UNKNOWN_TYPE.code();
    }

    private final class Handler extends ChannelInboundHandlerAdapter
    {
        @Override
        public void channelRead(final ChannelHandlerContext ctx, final Object msg)
        {
            final ByteBuf frame = (ByteBuf)msg;
            try
            {
                if (frame.readableBytes() < Frame.HEADER_LENGTH || Frame.version(frame) != Frame.VERSION)
                {
                    lastError = "peer sent a frame this SDK cannot read";
                    ctx.close();
                    return;
                }
                final long correlationId = Frame.correlationId(frame);
                switch (Frame.type(frame))
                {
                    case MessageType.RESULT:
                    case MessageType.BATCH_RESULT:
                        onResult(frame, correlationId);
                        break;
                    case MessageType.ERROR:
                        if (correlationId == 0 && (policies != null || isUnknownType(frame)))
                        {
                            // The answer to a policy subscription (an older node, or a set too large): calls are unaffected.
                            if (countedForFleet && Frame.frameEnd(frame) - Frame.bodyOffset(frame) >= 2 &&
                                frame.getUnsignedShort(Frame.bodyOffset(frame)) == ErrorCode.MALFORMED_FRAME.code() &&
                                PoliciesCodec.refusedAsOlderNode(ErrorCodec.message(frame, Frame.bodyOffset(frame), Frame.frameEnd(frame))))
                            {
                                // A node from before FLEET takes only the one-byte subscription: ask that way from now on.
                                countedForFleet = false;
                                LOG.info("{} does not count SDK instances (an older node): subscribing without an instance id", address);
                                subscribePolicies(ctx.channel());
                                break;
                            }
                            LOG.debug("{} did not serve the policy set", address);
                            break;
                        }
                        onError(frame, correlationId);
                        break;
                    case MessageType.POLICIES_RESULT:
                        if (policies != null)
                        {
                            try
                            {
                                final PoliciesCodec.Result result = PoliciesCodec.readResult(frame);
                                policies.received(result.version(), result.set());
                            }
                            catch (final IllegalArgumentException e)
                            {
                                LOG.warn("ignoring a policy set from {} this SDK cannot read: {}", address, e.getMessage());
                            }
                        }
                        break;
                    case MessageType.SHARD_MAP_RESULT:
                        try
                        {
                            shardMaps.accept(ShardMap.decode(frame, Frame.bodyOffset(frame), Frame.frameEnd(frame)));
                        }
                        catch (final IllegalArgumentException e)
                        {
                            LOG.warn("ignoring a shard map from {} this SDK cannot read: {}", address, e.getMessage());
                        }
                        break;
                    case MessageType.FLEET:
                        try
                        {
                            fleetInstances = FleetCodec.read(frame);
                        }
                        catch (final IllegalArgumentException e)
                        {
                            LOG.warn("ignoring a fleet count from {} this SDK cannot read: {}", address, e.getMessage());
                        }
                        break;
                    case MessageType.PONG:
                    case MessageType.DEGRADED_REPORT_RESULT:
                        final InFlight entry = inFlight.remove(correlationId);
                        if (entry != null && entry.ping != null)
                        {
                            entry.ping.complete(null);
                        }
                        break;
                    default:
                        LOG.warn("ignoring message type {} from {}", MessageType.name(Frame.type(frame)), address);
                        break;
                }
            }
            finally
            {
                frame.release();
            }
        }

        @Override
        public void channelInactive(final ChannelHandlerContext ctx)
        {
            if (channel == ctx.channel())
            {
                active = false;
                channel = null;
            }
            if (!closed)
            {
                lastError = "connection closed by " + address;
                failAll(new LimiterUnavailableException("connection to limiter " + address.getHostString() + ":" +
                    address.getPort() + " was lost before it answered"));
                scheduleReconnect();
            }
        }

        @Override
        public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause)
        {
            lastError = String.valueOf(cause.getMessage());
            ctx.close();
        }
    }

    /** Maps the policy refs in result frames to id strings without a new String per decision. */
    private static final class PolicyIdCache
    {
        private String[] ids = new String[16];
        private byte[][] bytes = new byte[16][];

        String resolve(final ResultDecoder decoder, final int ref)
        {
            final int entry = decoder.findPolicy(ref);
            if (entry < 0)
            {
                return "unknown";
            }
            final ByteBuf buf = decoder.buffer();
            final int offset = decoder.policyIdOffset(entry);
            final int length = decoder.policyIdLength(entry);
            if (ref >= ids.length)
            {
                final int n = Integer.highestOneBit(ref) << 1;
                ids = Arrays.copyOf(ids, n);
                bytes = Arrays.copyOf(bytes, n);
            }
            final byte[] cached = bytes[ref];
            if (cached != null && cached.length == length && sameBytes(buf, offset, cached))
            {
                return ids[ref];
            }
            final byte[] copy = new byte[length];
            buf.getBytes(offset, copy);
            bytes[ref] = copy;
            ids[ref] = new String(copy, StandardCharsets.UTF_8);
            return ids[ref];
        }

        private static boolean sameBytes(final ByteBuf buf, final int offset, final byte[] expected)
        {
            for (int i = 0; i < expected.length; i++)
            {
                if (buf.getByte(offset + i) != expected[i])
                {
                    return false;
                }
            }
            return true;
        }
    }
}
