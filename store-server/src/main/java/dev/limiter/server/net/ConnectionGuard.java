package dev.limiter.server.net;

import dev.limiter.server.metrics.ServerMetrics;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * First in every accepted connection's pipeline: turns away connections beyond a port's cap (with
 * a reason the port's protocol can carry), closes connections that stay idle, and closes those
 * that begin a message (a frame, an HTTP request) and do not finish it in time, so that nobody can
 * hold a node's memory or connection slots by saying nothing, or half of something. Each refusal
 * is counted ({@code limiter_refusals_total{port,reason}}). One instance per connection; the
 * {@link Limits} of a port are shared.
 */
public final class ConnectionGuard extends ChannelInboundHandlerAdapter
{
    /** The last message to a connection refused or closed for a reason. */
    @FunctionalInterface
    public interface Farewell
    {
        /**
         * @param reason  max-connections or unfinished-message
         * @param message what happened and what to do, for the peer
         * @return a message the port's pipeline can write, or null to just close
         */
        Object of(Channel channel, String reason, String message);
    }

    /** A port's limits, shared by its connections. */
    public static final class Limits
    {
        final String port;
        final int maxConnections;
        final long idleNanos;
        final long partialNanos;
        final ServerMetrics metrics;
        /** What to send a connection before closing it, in the port's protocol (or null: just close). */
        final Farewell farewell;
        final AtomicInteger open = new AtomicInteger();

        /**
         * @param port           data or admin (the metric's label)
         * @param maxConnections connections served at once; more are refused
         * @param idleMillis     a connection that sends nothing for this long is closed
         * @param partialMillis  a message begun and not finished within this is refused and the connection closed
         */
        public Limits(final String port, final int maxConnections, final long idleMillis, final long partialMillis, final ServerMetrics metrics,
            final Farewell farewell)
        {
            this.port = port;
            this.maxConnections = maxConnections;
            this.idleNanos = TimeUnit.MILLISECONDS.toNanos(idleMillis);
            this.partialNanos = TimeUnit.MILLISECONDS.toNanos(partialMillis);
            this.metrics = metrics;
            this.farewell = farewell;
        }

        /** Connections open on this port now. */
        int open()
        {
            return open.get();
        }

        long checkEveryNanos()
        {
            return Math.max(TimeUnit.MILLISECONDS.toNanos(20), Math.min(TimeUnit.SECONDS.toNanos(1), Math.min(idleNanos, partialNanos) / 4));
        }
    }

    private final Limits limits;
    /** Whether this port's protocol marks message starts itself ({@link #messageStarted}); else every read starts one. */
    private final boolean framed;
    private boolean counted;
    private long reads;
    private long readsAtLastCheck;
    private long quietSince;
    /** When the message being received began (0: none pending). */
    private long partialSince;
    private ScheduledFuture<?> check;
    private boolean closing;

    /**
     * @param framed true when the protocol's decoder reports message starts and ends (the data
     *               port's frames); false to count any bytes read as the start of a message that
     *               {@link #messageFinished()} ends (HTTP)
     */
    public ConnectionGuard(final Limits limits, final boolean framed)
    {
        this.limits = limits;
        this.framed = framed;
    }

    @Override
    public void channelActive(final ChannelHandlerContext ctx) throws Exception
    {
        if (limits.open.incrementAndGet() > limits.maxConnections)
        {
            limits.open.decrementAndGet();
            refuse(ctx, "max-connections", "this node serves at most " + limits.maxConnections + " connections on its " + limits.port +
                " port and has that many open; retry later, or use fewer connections per client");
            return;
        }
        counted = true;
        quietSince = System.nanoTime();
        final long every = limits.checkEveryNanos();
        check = ctx.executor().scheduleAtFixedRate(() -> check(ctx), every, every, TimeUnit.NANOSECONDS);
        super.channelActive(ctx);
    }

    @Override
    public void channelInactive(final ChannelHandlerContext ctx) throws Exception
    {
        if (counted)
        {
            counted = false;
            limits.open.decrementAndGet();
        }
        if (check != null)
        {
            check.cancel(false);
        }
        super.channelInactive(ctx);
    }

    @Override
    public void channelRead(final ChannelHandlerContext ctx, final Object msg) throws Exception
    {
        reads++;
        if (!framed && partialSince == 0)
        {
            partialSince = System.nanoTime();
        }
        super.channelRead(ctx, msg);
    }

    /** The first bytes of a message arrived (if one was not already pending). Event loop only. */
    void messageStarted(final long nowNanos)
    {
        if (partialSince == 0)
        {
            partialSince = nowNanos == 0 ? 1 : nowNanos;
        }
    }

    /** The pending message is complete. Event loop only. */
    public void messageFinished()
    {
        partialSince = 0;
    }

    private void check(final ChannelHandlerContext ctx)
    {
        if (closing || !ctx.channel().isActive())
        {
            return;
        }
        final long now = System.nanoTime();
        if (partialSince != 0 && now - partialSince > limits.partialNanos)
        {
            refuse(ctx, "unfinished-message", "a message was begun and not finished within " +
                TimeUnit.NANOSECONDS.toMillis(limits.partialNanos) + " ms; closing the connection");
            return;
        }
        if (reads != readsAtLastCheck)
        {
            readsAtLastCheck = reads;
            quietSince = now;
        }
        else if (now - quietSince > limits.idleNanos)
        {
            limits.metrics.refused(limits.port, "idle");
            closing = true;
            ctx.close();
        }
    }

    private void refuse(final ChannelHandlerContext ctx, final String reason, final String message)
    {
        limits.metrics.refused(limits.port, reason);
        closing = true;
        final Object farewell = limits.farewell == null ? null : limits.farewell.of(ctx.channel(), reason, message);
        if (farewell == null)
        {
            ctx.close();
            return;
        }
        // Through the whole pipeline (the protocol's encoder, TLS when on), then closed.
        ctx.channel().writeAndFlush(farewell).addListener(ChannelFutureListener.CLOSE);
    }
}
