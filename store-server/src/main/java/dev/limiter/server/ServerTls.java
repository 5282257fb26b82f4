package dev.limiter.server;

import dev.limiter.protocol.Pem;
import io.netty.channel.Channel;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;

import javax.net.ssl.SSLException;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;

/**
 * TLS on a node's data and admin ports: one server certificate and key, optionally a CA bundle
 * that clients must present a certificate from (mutual TLS). Built once at start-up from the PEM
 * files named in {@link ServerConfig}; a failed handshake closes the connection and is counted.
 */
final class ServerTls
{
    private final SslContext context;
    private final ServerMetrics metrics;

    private ServerTls(final SslContext context, final ServerMetrics metrics)
    {
        this.context = context;
        this.metrics = metrics;
    }

    /** TLS as configured, or null when the node serves plain TCP. */
    static ServerTls from(final ServerConfig config, final ServerMetrics metrics)
    {
        if (config.tlsCert() == null)
        {
            return null;
        }
        final List<X509Certificate> chain = Pem.certificates(config.tlsCert());
        final PrivateKey key = Pem.privateKey(config.tlsKey());
        final SslContextBuilder builder = SslContextBuilder.forServer(key, chain.toArray(new X509Certificate[0]));
        if (config.tlsCa() != null)
        {
            builder.trustManager(Pem.certificates(config.tlsCa()).toArray(new X509Certificate[0]));
        }
        builder.clientAuth(switch (config.tlsClientAuth())
        {
            case NONE -> ClientAuth.NONE;
            case OPTIONAL -> ClientAuth.OPTIONAL;
            case REQUIRE -> ClientAuth.REQUIRE;
        });
        try
        {
            return new ServerTls(builder.build(), metrics);
        }
        catch (final SSLException e)
        {
            throw new IllegalArgumentException("cannot set up TLS from " + config.tlsCert() + " and " + config.tlsKey() + ": " + e.getMessage(), e);
        }
    }

    /** A handler for the start of a new connection's pipeline on {@code port} (data or admin). */
    SslHandler handler(final Channel channel, final String port)
    {
        final SslHandler handler = context.newHandler(channel.alloc());
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
