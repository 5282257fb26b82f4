package dev.limiter.cli;

import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.Pem;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import javax.net.ssl.SSLContext;

/** The TLS options every command that talks to a node takes (a picocli mixin). */
public final class TlsOptions
{
    @Option(names = "--tls-ca", paramLabel = "FILE",
        description = "Talk TLS to the nodes and trust only these CAs (PEM bundle).")
    Path ca;

    @Option(names = "--tls-cert", paramLabel = "FILE", description = "Client certificate (PEM) for nodes that require mutual TLS; needs --tls-key.")
    Path cert;

    @Option(names = "--tls-key", paramLabel = "FILE", description = "The client certificate's private key, unencrypted PEM: PKCS#8, PKCS#1 or SEC1 " +
        "(BEGIN PRIVATE KEY, BEGIN RSA PRIVATE KEY or BEGIN EC PRIVATE KEY).")
    Path key;

    /** Sets these options on an SDK client being built (nothing when none was given). */
    public LimiterClient.Builder applyTo(final LimiterClient.Builder builder)
    {
        if (ca != null)
        {
            builder.tls(ca);
        }
        if (cert != null || key != null)
        {
            if (cert == null || key == null)
            {
                throw new IllegalArgumentException("--tls-cert and --tls-key go together: the certificate and its private key");
            }
            builder.tlsClientCertificate(cert, key);
        }
        return builder;
    }

    /** Whether any TLS option was given. */
    boolean requested()
    {
        return ca != null || cert != null || key != null;
    }

    /**
     * The TLS context the options describe, or null when none was given (plain TCP).
     *
     * @throws IllegalArgumentException naming what is wrong with the files
     */
    public SSLContext contextOrNull()
    {
        return requested() ? Pem.context(cert, key, ca) : null;
    }

    /**
     * The TLS context the options describe (the JDK's default trust when no CA was given).
     *
     * @throws AdminClient.Failure a usage failure naming what is wrong with the files
     */
    SSLContext context() throws AdminClient.Failure
    {
        try
        {
            return Pem.context(cert, key, ca);
        }
        catch (final IllegalArgumentException e)
        {
            throw AdminClient.usage(e.getMessage());
        }
    }
}
