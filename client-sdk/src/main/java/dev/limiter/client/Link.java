package dev.limiter.client;

import dev.limiter.protocol.Frame;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLParameters;

/**
 * One connection's TCP (or TLS) link to its node: opens it, re-opens it after a failure or a drop
 * by the client's {@link Backoff}, pings a link that wrote nothing for a while (a node closes
 * silent connections), and counts the frames written through it. Event loop only, but for the
 * volatile reads of {@link #channel()}, {@link #isActive()} and {@link #lastError()}.
 */
final class Link
{
    private static final Logger LOG = LoggerFactory.getLogger(Link.class);
    private static final int MAX_RESPONSE_FRAME_BYTES = 16 << 20;

    /** What the connection does when its link opens, drops or idles. */
    interface Listener
    {
        /** A new handler for the frames of a channel being opened. */
        ChannelHandler newFrameHandler();

        /** The link is open (after every reconnect too). */
        void opened(Channel channel);

        /** The link dropped; it is being re-opened. */
        void lost(String why);

        /** Nothing was written for a keep-alive interval. */
        void idle();
    }

    private final InetSocketAddress address;
    private final String hostPort;
    private final EventLoop loop;
    private final ConnectionSettings settings;
    private final Backoff backoff;
    private final Listener listener;
    private final List<Runnable> connectWaiters = new ArrayList<>();
    private volatile Channel channel;
    private volatile boolean active;
    private volatile boolean closed;
    private volatile String lastError = "not connected yet";
    private int reconnectAttempt;
    private ScheduledFuture<?> keepAlive;
    private long framesWritten;
    private long framesWrittenAtLastKeepAlive;

    Link(final InetSocketAddress address, final String hostPort, final EventLoop loop,
        final ConnectionSettings settings, final Backoff backoff, final Listener listener)
    {
        this.address = address;
        this.hostPort = hostPort;
        this.loop = loop;
        this.settings = settings;
        this.backoff = backoff;
        this.listener = listener;
    }

    /** Starts connecting (any thread); {@code onFirstAttempt} runs when the first attempt succeeds or fails. */
    void connect(final Runnable onFirstAttempt)
    {
        loop.execute(() ->
        {
            connectWaiters.add(onFirstAttempt);
            open();
        });
    }

    /** The open channel, or null. */
    Channel channel()
    {
        final Channel ch = channel;
        return ch != null && active ? ch : null;
    }

    /** A volatile read: cheap enough for every call. */
    boolean isActive()
    {
        return active;
    }

    String lastError()
    {
        return lastError;
    }

    void lastError(final String why)
    {
        lastError = why;
    }

    /** The node answered: a later drop starts the backoff from its beginning. */
    void answered()
    {
        reconnectAttempt = 0;
    }

    void write(final Channel ch, final ByteBuf frame)
    {
        ch.write(frame, ch.voidPromise());
        framesWritten++;
    }

    void writeAndFlush(final Channel ch, final ByteBuf frame)
    {
        ch.writeAndFlush(frame, ch.voidPromise());
        framesWritten++;
    }

    /** Closes the link for good (event loop); runs connect waiters still waiting. */
    void close()
    {
        closed = true;
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
        runConnectWaiters();
    }

    private void open()
    {
        if (closed)
        {
            return;
        }
        final Bootstrap bootstrap = new Bootstrap()
            .group(loop)
            .channel(settings.channelType())
            .option(ChannelOption.TCP_NODELAY, true)
            .option(ChannelOption.SO_KEEPALIVE, true)
            .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int)settings.connectTimeoutMillis())
            .handler(new ChannelInitializer<Channel>()
            {
                @Override
                protected void initChannel(final Channel ch)
                {
                    if (settings.tls() != null)
                    {
                        ch.pipeline().addLast(tlsHandler(ch));
                    }
                    ch.pipeline()
                        .addLast(new LengthFieldBasedFrameDecoder(MAX_RESPONSE_FRAME_BYTES, 0,
                            Frame.LENGTH_FIELD_LENGTH, 0, 0, true))
                        .addLast(listener.newFrameHandler())
                        .addLast(new Watcher());
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
                if (closed)
                {
                    channel.close();
                }
                else
                {
                    listener.opened(channel);
                }
                if (keepAlive == null && !closed)
                {
                    keepAlive = loop.scheduleWithFixedDelay(this::keepAlive, settings.keepAliveNanos(),
                        settings.keepAliveNanos(),
                        TimeUnit.NANOSECONDS);
                }
            }
            else
            {
                lastError = String.valueOf(f.cause().getMessage());
                reconnectLater();
            }
            runConnectWaiters();
        });
    }

    private void runConnectWaiters()
    {
        connectWaiters.forEach(Runnable::run);
        connectWaiters.clear();
    }

    /** The node's certificate must be trusted and must name the address this connection was given. */
    private SslHandler tlsHandler(final Channel ch)
    {
        final SslHandler handler = settings.tls().newHandler(ch.alloc(), address.getHostString(), address.getPort());
        final SSLParameters parameters = handler.engine().getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        handler.engine().setSSLParameters(parameters);
        handler.handshakeFuture().addListener(done ->
        {
            if (!done.isSuccess())
            {
                lastError = "TLS handshake with " + hostPort + " failed: " + done.cause().getMessage();
                LOG.warn("TLS handshake with {} failed: {}", hostPort, done.cause().toString());
            }
        });
        return handler;
    }

    private void keepAlive()
    {
        if (channel() == null || closed)
        {
            return;
        }
        if (framesWritten == framesWrittenAtLastKeepAlive)
        {
            listener.idle();
        }
        framesWrittenAtLastKeepAlive = framesWritten;
    }

    private void reconnectLater()
    {
        if (!closed)
        {
            loop.schedule(this::open, backoff.delayNanos(Backoff.Reason.RECONNECT, reconnectAttempt++),
                TimeUnit.NANOSECONDS);
        }
    }

    /** The last handler of the channel: its end, and failures no handler before it took. */
    private final class Watcher extends ChannelInboundHandlerAdapter
    {
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
                listener.lost("connection to limiter " + hostPort + " was lost before it answered");
                reconnectLater();
            }
        }

        @Override
        public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause)
        {
            lastError = String.valueOf(cause.getMessage());
            ctx.close();
        }
    }
}
