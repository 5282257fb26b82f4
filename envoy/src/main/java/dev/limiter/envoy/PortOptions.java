package dev.limiter.envoy;

import dev.limiter.protocol.ReloadingTls;
import io.netty.handler.ssl.ClientAuth;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/**
 * The options of a gateway's port, shared by {@code ./limiter rls} and {@code ./limiter api}: its
 * connection cap, its TLS (server-only or mutual, files followed on disk) and the TLS of the SDK's
 * connections to the store, checked with the node's rules and messages for the same options.
 */
public final class PortOptions
{
    @Option(names = "--max-connections", paramLabel = "N",
        description = "Connections served at once (per port); more are closed at once and counted. Envoy uses " +
            "about one per worker " +
            "thread per gateway (default: ${DEFAULT-VALUE}).")
    int maxConnections = RlsServer.DEFAULT_MAX_CONNECTIONS;

    @Option(names = "--tls-cert", paramLabel = "FILE",
        description = "PEM certificate chain: turns TLS on for the gateway's ports (off by default). Needs --tls-key.")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE",
        description = "PEM private key of --tls-cert, unencrypted: PKCS#8 (BEGIN PRIVATE KEY), PKCS#1 (BEGIN RSA " +
            "PRIVATE KEY) or SEC1 " +
            "(BEGIN EC PRIVATE KEY).")
    Path tlsKey;

    @Option(names = "--tls-ca", paramLabel = "FILE",
        description = "PEM CA bundle clients' (Envoy's, the API's callers') certificates must come from, with " +
            "--tls-client-auth.")
    Path tlsCa;

    @Option(names = "--tls-client-auth", paramLabel = "MODE",
        description = "Whether clients must present a certificate from --tls-ca: none, optional or require " +
            "(default: none).")
    String tlsClientAuth = "none";

    @Option(names = "--tls-reload-ms", paramLabel = "MS",
        description = "How often the TLS files (these and --store-tls-*) are checked: a changed certificate, key " +
            "or CA bundle is used by " +
            "new connections without a restart (files that do not load are logged and the previous ones kept); " +
            "0: read at start " +
            "only (default: ${DEFAULT-VALUE}).")
    long tlsReloadMillis = ReloadingTls.DEFAULT_CHECK_EVERY.toMillis();

    @Option(names = "--store-tls-ca", paramLabel = "FILE",
        description = "Talk to the store over TLS, trusting this CA bundle (PEM).")
    Path storeTlsCa;

    @Option(names = "--store-tls-cert", paramLabel = "FILE",
        description = "Client certificate (PEM) for nodes started with --tls-client-auth require; turns TLS to " +
            "the store on. " +
            "Needs --store-tls-key.")
    Path storeTlsCert;

    @Option(names = "--store-tls-key", paramLabel = "FILE",
        description = "The private key of --store-tls-cert (PKCS#8, PKCS#1 or SEC1 PEM).")
    Path storeTlsKey;

    /**
     * The port's settings from the options, checked with the node's rules and messages for the
     * same options (ServerConfig), and the TLS files read.
     *
     * @throws IllegalArgumentException what is wrong and what to do
     */
    public RlsServer.Port port()
    {
        require((tlsCert == null) == (tlsKey == null),
            "--tls-cert and --tls-key go together: the certificate and its private key");
        require(tlsCa == null || tlsCert != null,
            "--tls-ca needs --tls-cert and --tls-key: TLS is on only with a certificate "
            + "(to talk to the store over TLS, give its CA bundle as --store-tls-ca)");
        final ClientAuth clientAuth = clientAuth(tlsClientAuth);
        require(clientAuth == ClientAuth.NONE || tlsCa != null,
            "--tls-client-auth " + clientAuth.name().toLowerCase(Locale.ROOT)
                + " needs --tls-ca: the CAs client certificates must come from");
        require((storeTlsCert == null) == (storeTlsKey == null),
            "--store-tls-cert and --store-tls-key go together: the client certificate and its private key");
        for (final Path file : new Path[] {tlsCert, tlsKey, tlsCa, storeTlsCert, storeTlsKey, storeTlsCa})
        {
            require(file == null || Files.isReadable(file), "TLS file " + file + " does not exist or is not readable");
        }
        require(tlsReloadMillis == 0 || tlsReloadMillis >= ReloadingTls.MIN_CHECK_EVERY.toMillis()
            && tlsReloadMillis <= 86_400_000L, "--tls-reload-ms must be 0 (never) or "
            + ReloadingTls.MIN_CHECK_EVERY.toMillis() + " ms to 1 day, was " + tlsReloadMillis + " ms");
        final ReloadingTls tls = tlsCert == null ? null : ReloadingTls.load(tlsCert, tlsKey, tlsCa);
        final ReloadingTls storeTls = storeTlsCa == null && storeTlsCert == null ? null :
            ReloadingTls.load(storeTlsCert, storeTlsKey, storeTlsCa);
        return new RlsServer.Port(maxConnections, tls, clientAuth, storeTls, Duration.ofMillis(tlsReloadMillis));
    }

    private static ClientAuth clientAuth(final String mode)
    {
        try
        {
            return ClientAuth.valueOf(mode.strip().toUpperCase(Locale.ROOT));
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException("--tls-client-auth '" + mode + "' is not none, optional or require");
        }
    }

    private static void require(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(message);
        }
    }
}
