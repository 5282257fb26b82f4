package dev.limiter.raft;

import org.apache.ratis.grpc.server.GrpcServices;
import org.apache.ratis.thirdparty.io.grpc.netty.GrpcHttp2ConnectionHandler;
import org.apache.ratis.thirdparty.io.grpc.netty.GrpcSslContexts;
import org.apache.ratis.thirdparty.io.grpc.netty.InternalProtocolNegotiator;
import org.apache.ratis.thirdparty.io.grpc.netty.InternalProtocolNegotiators;
import org.apache.ratis.thirdparty.io.grpc.netty.NettyServerBuilder;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelHandler;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelHandlerContext;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelInboundHandlerAdapter;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelHandlerAdapter;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.ClientAuth;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslContext;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslContextBuilder;
import org.apache.ratis.thirdparty.io.netty.util.AsciiString;

import javax.net.ssl.SSLException;
import java.util.EnumSet;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Bounds what a client of the Raft port can hold, as the data and admin ports do: at most
 * {@link RaftNodeConfig#maxConnections()} connections (more are closed at once), a connection must
 * send the HTTP/2 preface (or, under TLS, finish its handshake and send it) within
 * {@link RaftNodeConfig#prefaceTimeoutMillis()}, and gRPC closes connections idle for
 * {@link RaftNodeConfig#idleTimeoutMillis()}, limits header sizes, pings and reset floods. With TLS
 * the port is mutual: a peer must present a certificate from the configured CAs.
 *
 * <p>Ratis lets an application customise the gRPC server builder; the connection cap and preface
 * deadline wrap gRPC's own protocol negotiator (plaintext or TLS), which is gRPC-internal API of
 * the version Ratis shades (pinned with Ratis in the build).
 */
final class RaftPortGuard implements GrpcServices.Customizer
{
    /** The HTTP/2 client preface every gRPC connection starts with. */
    private static final int PREFACE_BYTES = 24;

    private final RaftNodeConfig config;
    private final AtomicInteger open = new AtomicInteger();

    RaftPortGuard(final RaftNodeConfig config)
    {
        this.config = config;
    }

    @Override
    public NettyServerBuilder customize(final NettyServerBuilder builder, final EnumSet<GrpcServices.Type> types)
    {
        final Guarded guarded = new Guarded(config.tls() ? this::tlsNegotiator : InternalProtocolNegotiators::serverPlaintext);
        guarded.current(); // bad TLS material fails the start
        return builder
            .protocolNegotiator(guarded)
            .maxConnectionIdle(config.idleTimeoutMillis(), TimeUnit.MILLISECONDS)
            .keepAliveTime(30, TimeUnit.SECONDS)
            .keepAliveTimeout(10, TimeUnit.SECONDS)
            .permitKeepAliveTime(5, TimeUnit.SECONDS)
            .maxInboundMetadataSize(16 * 1024)
            .maxRstFramesPerWindow(500, 10);
    }

    /** gRPC's TLS negotiator over a new context on the configured managers: mutual, peers' certificates must come from the CAs. */
    private InternalProtocolNegotiator.ProtocolNegotiator tlsNegotiator()
    {
        try
        {
            final SslContext tls = GrpcSslContexts.configure(SslContextBuilder.forServer(config.tlsKeys()))
                .trustManager(config.tlsTrust())
                .clientAuth(ClientAuth.REQUIRE)
                .build();
            return InternalProtocolNegotiators.serverTls(tls);
        }
        catch (final SSLException e)
        {
            throw new IllegalArgumentException("cannot set up TLS on the Raft port: " + e.getMessage(), e);
        }
    }

    /**
     * gRPC's negotiator (plaintext or TLS) with a connection guard in front of it. Under TLS, the
     * negotiator is made again when the TLS material changes ({@link RaftNodeConfig#tlsGeneration()}):
     * a new context has a new session cache, so a peer cannot resume a session the old material
     * (a CA since removed, say) accepted.
     */
    private final class Guarded implements InternalProtocolNegotiator.ProtocolNegotiator
    {
        private final Supplier<InternalProtocolNegotiator.ProtocolNegotiator> factory;
        private InternalProtocolNegotiator.ProtocolNegotiator inner;
        private long generation = Long.MIN_VALUE;

        Guarded(final Supplier<InternalProtocolNegotiator.ProtocolNegotiator> factory)
        {
            this.factory = factory;
        }

        /** The negotiator for a new connection: made again when the TLS material changed since the last. */
        synchronized InternalProtocolNegotiator.ProtocolNegotiator current()
        {
            final long now = config.tlsGeneration().getAsLong();
            if (inner == null || now != generation)
            {
                inner = factory.get();
                generation = now;
            }
            return inner;
        }

        @Override
        public AsciiString scheme()
        {
            return current().scheme();
        }

        @Override
        public ChannelHandler newHandler(final GrpcHttp2ConnectionHandler grpcHandler)
        {
            ChannelHandler built;
            try
            {
                built = current().newHandler(grpcHandler);
            }
            catch (final IllegalArgumentException e)
            {
                // New material that no TLS context takes: keep serving with the last that did.
                synchronized (this)
                {
                    generation = config.tlsGeneration().getAsLong();
                }
                built = inner.newHandler(grpcHandler);
            }
            final ChannelHandler negotiation = built;
            // gRPC places this handler where its negotiation belongs (before its write buffer): put the
            // guard and the negotiation there, in that order, and step aside.
            return new ChannelHandlerAdapter()
            {
                @Override
                public void handlerAdded(final ChannelHandlerContext ctx)
                {
                    ctx.pipeline().addAfter(ctx.name(), null, negotiation);
                    ctx.pipeline().addAfter(ctx.name(), null, new Guard());
                    ctx.pipeline().remove(this);
                }
            };
        }

        @Override
        public synchronized void close()
        {
            if (inner != null)
            {
                inner.close();
            }
        }
    }

    /** One connection's guard: counts it against the cap and closes it if its preface is late. */
    private final class Guard extends ChannelInboundHandlerAdapter
    {
        private long bytes;
        private ScheduledFuture<?> deadline;

        @Override
        public void handlerAdded(final ChannelHandlerContext ctx)
        {
            // Added once the channel is active: count it now.
            if (open.incrementAndGet() > config.maxConnections())
            {
                open.decrementAndGet();
                refuse(ctx, "max-connections");
                return;
            }
            deadline = ctx.executor().schedule(() ->
            {
                if (bytes < PREFACE_BYTES && ctx.channel().isActive())
                {
                    refuse(ctx, "unfinished-message");
                }
            }, config.prefaceTimeoutMillis(), TimeUnit.MILLISECONDS);
            ctx.channel().closeFuture().addListener(closed ->
            {
                deadline.cancel(false);
                open.decrementAndGet();
            });
        }

        @Override
        public void channelRead(final ChannelHandlerContext ctx, final Object msg) throws Exception
        {
            if (msg instanceof ByteBuf buf && bytes < PREFACE_BYTES)
            {
                bytes += buf.readableBytes();
            }
            super.channelRead(ctx, msg);
        }

        private void refuse(final ChannelHandlerContext ctx, final String reason)
        {
            final Consumer<String> refusals = config.refusals();
            if (refusals != null)
            {
                refusals.accept(reason);
            }
            ctx.close();
        }
    }
}
