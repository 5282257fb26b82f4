package dev.limiter.server;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.net.ConnectionGuard;
import dev.limiter.server.net.FrameDecoder;
import dev.limiter.server.net.Listener;
import dev.limiter.server.net.ServerTls;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.concurrent.GlobalEventExecutor;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The binary data port: its listener, and the pipeline of each connection it accepts (connection
 * guard, TLS when on, flush consolidation, frame decoding, then a data-plane handler of its own),
 * and the connections open on it. A connection turned away (over the cap, a frame left unfinished)
 * is told why in an ERROR frame.
 */
final class DataPort
{
    private static final int BACKLOG = 1024;
    private static final int FLUSH_CONSOLIDATION = 256;
    /** How long a stopping node waits for its connections to close. */
    private static final long CLOSE_WAIT_SECONDS = 5;

    private final DataPortConfig config;
    private final ServerTls tls;
    private final ConnectionGuard.Limits limits;
    private final ChannelGroup connections = new DefaultChannelGroup("limiter-connections",
        GlobalEventExecutor.INSTANCE);
    private volatile Channel channel;

    /**
     * @param tls TLS on the port, or null
     */
    DataPort(final DataPortConfig config, final ServerMetrics metrics, final ServerTls tls)
    {
        this.config = config;
        this.tls = tls;
        this.limits = new ConnectionGuard.Limits("data", config.maxConnections(), config.idleTimeoutMillis(),
            config.frameTimeoutMillis(), metrics, (connection, reason, why) ->
            {
                final ByteBuf out = connection.alloc().buffer(64 + why.length());
                ErrorCodec.encode(out, 0, reason.equals("max-connections") ?
                    ErrorCode.OVERLOADED : ErrorCode.MALFORMED_FRAME, why);
                return out;
            });
    }

    /**
     * Listens on the configured host and port.
     *
     * @param handlers a new data-plane handler for each connection, last in its pipeline
     * @throws Listener.ListenFailure when the port cannot be had, naming {@code --port}
     */
    void bind(final EventLoopGroup boss, final EventLoopGroup workers, final Class<? extends ServerChannel> channelType,
        final Supplier<? extends ChannelHandler> handlers) throws InterruptedException
    {
        final ServerBootstrap bootstrap = new ServerBootstrap()
            .group(boss, workers)
            .channel(channelType)
            .option(ChannelOption.SO_BACKLOG, BACKLOG)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 1024 * 1024))
            .childHandler(new ChannelInitializer<SocketChannel>()
            {
                @Override
                protected void initChannel(final SocketChannel ch)
                {
                    connections.add(ch);
                    final ConnectionGuard guard = new ConnectionGuard(limits, true);
                    ch.pipeline().addLast("guard", guard);
                    if (tls != null)
                    {
                        ch.pipeline().addLast("tls", tls.handler(ch, "data"));
                    }
                    ch.pipeline()
                        .addLast("flush", new FlushConsolidationHandler(FLUSH_CONSOLIDATION, true))
                        .addLast("frames", new FrameDecoder(config.maxFrameBytes(), guard))
                        .addLast("data-plane", handlers.get());
                }
            });
        channel = Listener.bind(bootstrap, config.host(), config.port(), "data port", "--port");
    }

    /** The bound port. */
    int port()
    {
        return ((InetSocketAddress)channel.localAddress()).getPort();
    }

    /** host:port, the port bound once it is, the configured one before. */
    String address()
    {
        return config.host() + ":" + (channel == null ? config.port() : port());
    }

    /** Whether the port is bound and listening. */
    boolean listening()
    {
        return channel != null && channel.isActive();
    }

    /** Connections open on the port now. */
    int connections()
    {
        return connections.size();
    }

    /** Takes no new connection; those open stay. */
    void stopListening()
    {
        if (channel != null)
        {
            channel.close().syncUninterruptibly();
        }
    }

    /** Closes every connection, waiting a few seconds at most. */
    void closeConnections()
    {
        connections.close().awaitUninterruptibly(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
    }
}
