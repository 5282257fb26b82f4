package dev.limiter.envoy;

import dev.limiter.protocol.ReloadingTls;
import io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.InternalProtocolNegotiators;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.AsciiString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLException;

/**
 * What stands before gRPC on the gateway's port: a cap on connections (more are closed at once and
 * counted, as the node's ports do) and, when configured, TLS, server-only or mutual. gRPC's own
 * negotiator (plaintext or TLS) does the work; this wraps it, which is gRPC-internal API of the
 * grpc-netty version pinned in the build. Also guards the gRPC port of {@code ./limiter api}. Under TLS the negotiator is made again after each reload
 * of the files: a new context has a new session cache, so no session from before the reload is
 * resumed (a client certificate of a CA since removed, say). Thread-safe: one per port.
 */
public final class RlsPortGuard implements InternalProtocolNegotiator.ProtocolNegotiator
{
    private static final Logger LOG = LoggerFactory.getLogger(RlsPortGuard.class);

    private final int maxConnections;
    private final ReloadingTls tls;
    private final ClientAuth clientAuth;
    private final AtomicInteger open = new AtomicInteger();
    private final AtomicLong refusedOverCap = new AtomicLong();
    private final AtomicLong failedHandshakes = new AtomicLong();
    private InternalProtocolNegotiator.ProtocolNegotiator inner;
    private long generation;

    /**
     * @param maxConnections connections served at once; more are closed at once
     * @param tls            the port's certificate (and CA bundle for client certificates), or null: plaintext
     * @param clientAuth     whether clients must present a certificate from the CA bundle
     * @throws IllegalArgumentException when no TLS context can be made of {@code tls}
     */
    public RlsPortGuard(final int maxConnections, final ReloadingTls tls, final ClientAuth clientAuth)
    {
        this.maxConnections = maxConnections;
        this.tls = tls;
        this.clientAuth = clientAuth;
        this.generation = tls == null ? 0 : tls.reloads();
        this.inner = negotiator();
    }

    private InternalProtocolNegotiator.ProtocolNegotiator negotiator()
    {
        if (tls == null)
        {
            return InternalProtocolNegotiators.serverPlaintext();
        }
        final SslContextBuilder builder = GrpcSslContexts.configure(SslContextBuilder.forServer(tls.keyManager())).clientAuth(clientAuth);
        if (tls.trustManager() != null)
        {
            builder.trustManager(tls.trustManager());
        }
        try
        {
            return InternalProtocolNegotiators.serverTls(builder.build());
        }
        catch (final SSLException e)
        {
            throw new IllegalArgumentException("cannot set up TLS on the gateway's port with " + tls.certificate().getSubjectX500Principal() +
                ": " + e.getMessage(), e);
        }
    }

    /** The negotiator for a new connection: made again once after each reload of the TLS files. */
    private synchronized InternalProtocolNegotiator.ProtocolNegotiator current()
    {
        if (tls != null && tls.reloads() != generation)
        {
            generation = tls.reloads();
            try
            {
                inner = negotiator();
            }
            catch (final IllegalArgumentException e)
            {
                LOG.warn("TLS: keeping the previous certificate on the gateway's port: {}", e.getMessage());
            }
        }
        return inner;
    }

    /** Connections closed because the port had {@code maxConnections} open. */
    public long refusedOverCap()
    {
        return refusedOverCap.get();
    }

    /** Connections closed before their TLS handshake completed (a bad or missing client certificate, plaintext, a client gone). */
    public long failedHandshakes()
    {
        return failedHandshakes.get();
    }

    /** Connections open now. */
    public int open()
    {
        return open.get();
    }

    @Override
    public AsciiString scheme()
    {
        return current().scheme();
    }

    @Override
    public ChannelHandler newHandler(final GrpcHttp2ConnectionHandler grpcHandler)
    {
        return new Admission(current().newHandler(grpcHandler));
    }

    /**
     * Where gRPC places its negotiation: counts the connection (closing one over the cap), puts the
     * negotiation after itself, and once the connection is active (gRPC's TLS handler is added
     * then) watches the handshake and steps aside.
     */
    private final class Admission extends ChannelInboundHandlerAdapter
    {
        private final ChannelHandler negotiation;

        Admission(final ChannelHandler negotiation)
        {
            this.negotiation = negotiation;
        }

        @Override
        public void handlerAdded(final ChannelHandlerContext ctx)
        {
            if (open.incrementAndGet() > maxConnections)
            {
                open.decrementAndGet();
                refusedOverCap.incrementAndGet();
                ctx.channel().close();
                return;
            }
            ctx.channel().closeFuture().addListener(closed -> open.decrementAndGet());
            ctx.pipeline().addAfter(ctx.name(), null, negotiation);
            if (ctx.channel().isActive())
            {
                watchHandshake(ctx);
            }
        }

        @Override
        public void channelActive(final ChannelHandlerContext ctx)
        {
            ctx.fireChannelActive();
            watchHandshake(ctx);
        }

        private void watchHandshake(final ChannelHandlerContext ctx)
        {
            final SslHandler handshake = ctx.pipeline().get(SslHandler.class);
            if (handshake != null)
            {
                handshake.handshakeFuture().addListener(done ->
                {
                    if (!done.isSuccess())
                    {
                        failedHandshakes.incrementAndGet();
                    }
                });
            }
            if (handshake != null || tls == null)
            {
                ctx.pipeline().remove(this);
            }
        }
    }

    @Override
    public synchronized void close()
    {
        inner.close();
    }
}
