package dev.limiter.server.net;

import dev.limiter.protocol.Pem;
import dev.limiter.server.metrics.ServerMetrics;
import io.netty.channel.Channel;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;

import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import javax.net.ssl.SSLException;

/**
 * TLS on a node's data and admin ports: one server certificate and key, optionally a CA bundle
 * that clients must present a certificate from (mutual TLS). Built once at start-up from the PEM
 * files the node was started with; a failed handshake closes the connection and is counted.
 */
public final class ServerTls
{
    private final SslContext context;
    private final ServerMetrics metrics;

    private ServerTls(final SslContext context, final ServerMetrics metrics)
    {
        this.context = context;
        this.metrics = metrics;
    }

    /** TLS as configured, or null when the node serves plain TCP. */
    public static ServerTls from(final Path cert, final Path key, final Path ca, final TlsClientAuth clientAuth,
        final ServerMetrics metrics)
    {
        if (cert == null)
        {
            return null;
        }
        final List<X509Certificate> chain = Pem.certificates(cert);
        final PrivateKey privateKey = Pem.privateKey(key);
        if (!chain.isEmpty())
        {
            metrics.bindCertificateExpiry(chain.get(0).getNotAfter().toInstant().getEpochSecond());
        }
        final SslContextBuilder builder = SslContextBuilder.forServer(privateKey, chain.toArray(new X509Certificate[0]));
        if (ca != null)
        {
            builder.trustManager(Pem.certificates(ca).toArray(new X509Certificate[0]));
        }
        builder.clientAuth(switch (clientAuth)
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
            throw new IllegalArgumentException("cannot set up TLS from " + cert + " and " + key + ": " + e.getMessage(), e);
        }
    }

    /** A handler for the start of a new connection's pipeline on {@code port} (data or admin). */
    public SslHandler handler(final Channel channel, final String port)
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
