package dev.limiter.server.net;

import dev.limiter.protocol.ReloadingTls;
import dev.limiter.server.metrics.ServerMetrics;
import io.netty.channel.Channel;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLException;

/**
 * TLS on a node's data and admin ports: the node's certificate and key, optionally a CA bundle
 * that clients must present a certificate from (mutual TLS), held by a {@link ReloadingTls} that
 * follows the files on disk. A new connection gets its handler from a context over the current
 * material, made again after each reload, so that new handshakes present the new certificate and
 * no session from before the reload is resumed (a client certificate of a CA since removed, say);
 * connections already open keep their session. A failed handshake closes the connection and is
 * counted.
 */
public final class ServerTls
{
    private static final Logger LOG = LoggerFactory.getLogger(ServerTls.class);

    private final ReloadingTls material;
    private final ClientAuth clientAuth;
    private final ServerMetrics metrics;
    private volatile Built context;

    /** A context and the load of the files it was made for. */
    private record Built(SslContext context, long generation)
    {
    }

    private ServerTls(final ReloadingTls material, final TlsClientAuth clientAuth, final ServerMetrics metrics)
    {
        this.material = material;
        this.clientAuth = switch (clientAuth)
        {
            case NONE -> ClientAuth.NONE;
            case OPTIONAL -> ClientAuth.OPTIONAL;
            case REQUIRE -> ClientAuth.REQUIRE;
        };
        this.metrics = metrics;
        this.context = build(material.reloads());
    }

    /**
     * TLS over {@code material}, or null when the node serves plain TCP ({@code material} null).
     *
     * @throws IllegalArgumentException when Netty cannot make a server context of it
     */
    public static ServerTls over(final ReloadingTls material, final TlsClientAuth clientAuth, final ServerMetrics metrics)
    {
        return material == null ? null : new ServerTls(material, clientAuth, metrics);
    }

    private Built build(final long generation)
    {
        final SslContextBuilder builder = SslContextBuilder.forServer(material.keyManager()).clientAuth(clientAuth);
        if (material.trustManager() != null)
        {
            builder.trustManager(material.trustManager());
        }
        try
        {
            return new Built(builder.build(), generation);
        }
        catch (final SSLException e)
        {
            throw new IllegalArgumentException("cannot set up TLS with " + material.certificate().getSubjectX500Principal() + ": " +
                e.getMessage(), e);
        }
    }

    /** The context for a new connection: made again once after each reload of the files. */
    private SslContext context()
    {
        Built built = context;
        final long generation = material.reloads();
        if (built.generation != generation)
        {
            synchronized (this)
            {
                built = context;
                if (built.generation != generation)
                {
                    try
                    {
                        built = build(generation);
                    }
                    catch (final IllegalArgumentException e)
                    {
                        // Material the TLS stack will not take (it loaded, so this is rare): keep the last context.
                        LOG.warn("TLS: keeping the previous certificate on the data and admin ports: {}", e.getMessage());
                        built = new Built(built.context, generation);
                    }
                    context = built;
                }
            }
        }
        return built.context;
    }

    /** A handler for the start of a new connection's pipeline on {@code port} (data or admin). */
    public SslHandler handler(final Channel channel, final String port)
    {
        final SslHandler handler = context().newHandler(channel.alloc());
        handler.handshakeFuture().addListener(done ->
        {
            if (!done.isSuccess())
            {
                metrics.refused(port, "tls-handshake");
            }
        });
        return handler;
    }
}
