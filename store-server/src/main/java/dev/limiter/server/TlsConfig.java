package dev.limiter.server;

import dev.limiter.protocol.ReloadingTls;
import dev.limiter.server.net.TlsClientAuth;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * TLS on every port of the node (data, admin, Raft) and to the other regions: the PEM files, whether
 * clients must present a certificate, and how often the files are checked for a new one. Off when no
 * certificate is given.
 *
 * @param cert         PEM certificate chain this node presents; null serves plain TCP
 * @param key          PEM private key of {@code cert}: PKCS#8, PKCS#1 (RSA) or SEC1 (EC), unencrypted
 * @param ca           PEM CA bundle: members' certificates on the Raft port must come from it (always mutual),
 *                     and so must clients' on the data and admin ports when {@code clientAuth} asks for them
 * @param clientAuth   whether data and admin clients must present a certificate
 * @param reloadMillis how often the files are checked for changes, ms; 0: read at start only
 */
public record TlsConfig(Path cert, Path key, Path ca, TlsClientAuth clientAuth, long reloadMillis)
{
    /** TLS's defaults, with their units in their names. */
    public static final class Defaults
    {
        public static final TlsClientAuth CLIENT_AUTH = TlsClientAuth.NONE;
        /** How often the TLS files are checked for a new certificate, key or CA bundle (0: never). */
        public static final long RELOAD_MILLIS = ReloadingTls.DEFAULT_CHECK_EVERY.toMillis();

        private Defaults()
        {
        }
    }

    /** TLS off. */
    public static final TlsConfig OFF = new TlsConfig(null, null, null, Defaults.CLIENT_AUTH, Defaults.RELOAD_MILLIS);

    public TlsConfig
    {
        Settings.require(clientAuth != null, "--tls-client-auth must be none, optional or require");
        Settings.require((cert == null) == (key == null),
            "--tls-cert and --tls-key go together: the certificate and its private key");
        Settings.require(ca == null || cert != null,
            "--tls-ca needs --tls-cert and --tls-key: TLS is on only with a certificate");
        Settings.require(clientAuth == TlsClientAuth.NONE || ca != null, "--tls-client-auth " +
            clientAuth.name().toLowerCase(Locale.ROOT) + " needs --tls-ca: the CAs client certificates must come from");
        for (final Path file : new Path[] {cert, key, ca})
        {
            Settings.require(file == null || Files.isReadable(file),
                "TLS file " + file + " does not exist or is not readable");
        }
        final long least = ReloadingTls.MIN_CHECK_EVERY.toMillis();
        Settings.require(reloadMillis == 0 || reloadMillis >= least && reloadMillis <= 86_400_000L,
            "--tls-reload-ms must be 0 (never) or " + least + " ms to 1 day, was " + reloadMillis + " ms");
    }

    /** Whether TLS is on (a certificate is given). */
    public boolean enabled()
    {
        return cert != null;
    }

    /**
     * Reads {@code --tls-client-auth}: none, optional or require, in any case.
     *
     * @throws IllegalArgumentException naming the value and the accepted ones
     */
    public static TlsClientAuth clientAuth(final String mode)
    {
        try
        {
            return TlsClientAuth.valueOf(mode.strip().toUpperCase(Locale.ROOT));
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException("--tls-client-auth '" + mode + "' is not none, optional or require");
        }
    }
}
