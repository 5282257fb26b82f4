package dev.limiter.protocol;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * The TLS material of a port or a client (a certificate chain and its key, a CA bundle), read from
 * PEM files ({@link Pem}) and read again when the files change, so that certificates rotated on
 * disk (cert-manager replaces files or the symlinks to them) are used without a restart.
 *
 * <p>Its {@link #keyManager()} and {@link #trustManager()} are handed once to whichever TLS stack
 * serves the port (Netty's SslContext, gRPC's, Ratis' shaded one, the JDK's SSLContext); they look
 * up the current material on every handshake. After {@link #reload()} has taken new files, new
 * handshakes present and verify with them; established connections keep their session.
 *
 * <p>A change that does not load (a corrupt or half-written file, a missing one, a key that is not
 * the certificate's, as between the two writes of a rotation that is not atomic) keeps the material
 * in use, TLS is never dropped, and is reported once per distinct content of the files. A key and
 * certificate written one after the other thus load at the first check after both are there.
 */
public final class ReloadingTls implements AutoCloseable
{
    /** Least time between two checks of the files. */
    public static final Duration MIN_CHECK_EVERY = Duration.ofMillis(100);
    /** How often servers look at their TLS files by default. */
    public static final Duration DEFAULT_CHECK_EVERY = Duration.ofSeconds(10);

    /** What one check of the files did. */
    public enum Outcome
    {
        /** The files are as last loaded, or as last reported bad. */
        UNCHANGED,
        /** New files were loaded: new handshakes use them. */
        RELOADED,
        /** The files changed and do not load: the material in use is kept. */
        FAILED
    }

    /** Told of every {@link Outcome#RELOADED} and {@link Outcome#FAILED} check (on the checking thread; must not throw). */
    @FunctionalInterface
    public interface Listener
    {
        /**
         * @param outcome RELOADED or FAILED
         * @param detail  what was loaded (the certificate's subject and expiry), or why the files were not
         */
        void checked(Outcome outcome, String detail);
    }

    /** One load of the files. */
    private record Material(long generation, byte[] fingerprint, String alias, X509Certificate[] chain, PrivateKey key,
        X509ExtendedKeyManager keys, X509ExtendedTrustManager trust)
    {
    }

    private final Path certificate;
    private final Path key;
    private final Path ca;
    private final Keys keyManager;
    private final Trust trustManager;
    private volatile Material current;
    /** The material before the current one: a handshake that chose its alias just before a reload still finds its key. */
    private volatile Material previous;
    /** The files as last found bad (reported once), or null. */
    private volatile byte[] failedFingerprint;
    private volatile Listener listener = (outcome, detail) ->
    {
    };
    private ScheduledExecutorService timer;

    private ReloadingTls(final Path certificate, final Path key, final Path ca, final Material material)
    {
        this.certificate = certificate;
        this.key = key;
        this.ca = ca;
        this.current = material;
        this.keyManager = certificate == null ? null : new Keys();
        this.trustManager = ca == null ? null : new Trust();
    }

    /**
     * Reads the files once; nothing watches them until {@link #watch}.
     *
     * @param certificate PEM chain (the leaf first), or null: nothing to present
     * @param key         its private key (PKCS#8, PKCS#1 or SEC1), given with {@code certificate}
     * @param ca          PEM CA bundle to verify peers against, or null: the JDK's default trust for a
     *                    client, no client certificates for a server
     * @throws IllegalArgumentException naming the file and what to do, when they do not load
     */
    public static ReloadingTls load(final Path certificate, final Path key, final Path ca)
    {
        if ((certificate == null) != (key == null))
        {
            throw new IllegalArgumentException("a certificate needs its private key and a key its certificate: give both or neither");
        }
        final byte[][] files = read(certificate, key, ca);
        return new ReloadingTls(certificate, key, ca, material(certificate, key, ca, files, fingerprint(files), 1));
    }

    /** Presents the current certificate, or null when there is none. */
    public X509ExtendedKeyManager keyManager()
    {
        return keyManager;
    }

    /** Verifies peers against the current CA bundle, or null when there is none. */
    public X509ExtendedTrustManager trustManager()
    {
        return trustManager;
    }

    /** The current certificate (the leaf), or null when there is none. */
    public X509Certificate certificate()
    {
        final Material material = current;
        return material.chain == null ? null : material.chain[0];
    }

    /**
     * Whether the files, at the last check, had changed and did not load: the previous material is
     * still in use. False again once they load, or are back to what is in use.
     */
    public boolean refusing()
    {
        return failedFingerprint != null;
    }

    /** How many times new files have been loaded since the first load. */
    public long reloads()
    {
        return current.generation - 1;
    }

    /**
     * A JDK TLS context over {@link #keyManager()} and {@link #trustManager()} (the JDK's default
     * trust when there is no CA bundle): for HTTPS and socket clients, and servers built on the JDK.
     */
    public SSLContext context()
    {
        try
        {
            final SSLContext context = SSLContext.getInstance("TLS");
            context.init(keyManager == null ? null : new KeyManager[] {keyManager}, trustManager == null ? null : new TrustManager[] {trustManager},
                null);
            return context;
        }
        catch (final GeneralSecurityException e)
        {
            throw new IllegalStateException("the JDK offers no TLS context: " + e.getMessage(), e);
        }
    }

    /** Replaces the listener told of reloads and failures. */
    public ReloadingTls listener(final Listener listener)
    {
        this.listener = Objects.requireNonNull(listener, "listener");
        return this;
    }

    /**
     * Looks at the files now and loads them if they changed and load. Thread-safe.
     *
     * @return what it did (FAILED once per distinct bad content; UNCHANGED while the same bad files stay)
     */
    public synchronized Outcome reload()
    {
        byte[][] files = null;
        byte[] fingerprint;
        String problem = null;
        try
        {
            files = read(certificate, key, ca);
            fingerprint = fingerprint(files);
        }
        catch (final IllegalArgumentException e)
        {
            problem = e.getMessage();
            fingerprint = digest(problem.getBytes(StandardCharsets.UTF_8));
        }
        final Material material = current;
        if (Arrays.equals(fingerprint, material.fingerprint))
        {
            failedFingerprint = null;
            return Outcome.UNCHANGED;
        }
        if (Arrays.equals(fingerprint, failedFingerprint))
        {
            return Outcome.UNCHANGED;
        }
        if (problem == null)
        {
            try
            {
                final Material next = material(certificate, key, ca, files, fingerprint, material.generation + 1);
                previous = material;
                current = next;
                failedFingerprint = null;
                listener.checked(Outcome.RELOADED, describe(next));
                return Outcome.RELOADED;
            }
            catch (final IllegalArgumentException e)
            {
                problem = e.getMessage();
            }
        }
        failedFingerprint = fingerprint;
        listener.checked(Outcome.FAILED, problem + "; still using " + describe(material));
        return Outcome.FAILED;
    }

    /**
     * Checks the files every {@code every} on a daemon thread of its own until {@link #close()}.
     *
     * @throws IllegalArgumentException when {@code every} is under {@link #MIN_CHECK_EVERY}
     */
    public synchronized ReloadingTls watch(final Duration every)
    {
        if (every.compareTo(MIN_CHECK_EVERY) < 0)
        {
            throw new IllegalArgumentException("TLS files are checked at most every " + MIN_CHECK_EVERY.toMillis() + " ms, asked every " +
                every.toMillis() + " ms");
        }
        if (timer != null)
        {
            throw new IllegalStateException("already watching " + describeFiles());
        }
        timer = Executors.newSingleThreadScheduledExecutor(task ->
        {
            final Thread thread = new Thread(task, "limiter-tls-reload");
            thread.setDaemon(true);
            return thread;
        });
        timer.scheduleWithFixedDelay(() ->
        {
            try
            {
                reload();
            }
            catch (final RuntimeException e)
            {
                // A listener that threw: the next check still runs.
            }
        }, every.toNanos(), every.toNanos(), TimeUnit.NANOSECONDS);
        return this;
    }

    /** Stops watching the files (the managers keep the material they hold). */
    @Override
    public synchronized void close()
    {
        if (timer != null)
        {
            timer.shutdownNow();
            timer = null;
        }
    }

    private String describeFiles()
    {
        return (certificate == null ? "" : certificate + ", " + key) + (ca == null ? "" : (certificate == null ? "" : ", ") + ca);
    }

    private static String describe(final Material material)
    {
        if (material.chain == null)
        {
            return "the CA bundle of generation " + material.generation;
        }
        final X509Certificate leaf = material.chain[0];
        return "certificate '" + leaf.getSubjectX500Principal().getName() + "' (serial " + leaf.getSerialNumber().toString(16) +
            ", valid until " + leaf.getNotAfter().toInstant() + ")";
    }

    private static byte[][] read(final Path certificate, final Path key, final Path ca)
    {
        final Path[] paths = {certificate, key, ca};
        final byte[][] files = new byte[3][];
        for (int i = 0; i < paths.length; i++)
        {
            if (paths[i] != null)
            {
                try
                {
                    files[i] = Files.readAllBytes(paths[i]);
                }
                catch (final IOException e)
                {
                    throw new IllegalArgumentException("cannot read TLS file " + paths[i] + ": " + e);
                }
            }
        }
        return files;
    }

    private static Material material(final Path certificatePath, final Path keyPath, final Path caPath, final byte[][] files,
        final byte[] fingerprint, final long generation)
    {
        try
        {
            X509Certificate[] chain = null;
            PrivateKey privateKey = null;
            X509ExtendedKeyManager keys = null;
            final String alias = "limiter-" + generation;
            if (files[0] != null)
            {
                chain = Pem.certificates(files[0], certificatePath.toString()).toArray(new X509Certificate[0]);
                privateKey = Pem.privateKey(files[1], keyPath.toString());
                if (!Pem.matches(privateKey, chain[0]))
                {
                    throw new IllegalArgumentException("the private key in " + keyPath + " is not the key of the certificate in " +
                        certificatePath + " (its first one): give the key the certificate was issued for");
                }
                final KeyStore store = KeyStore.getInstance("PKCS12");
                store.load(null, null);
                store.setKeyEntry(alias, privateKey, new char[0], chain);
                final KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                factory.init(store, new char[0]);
                keys = (X509ExtendedKeyManager)factory.getKeyManagers()[0];
            }
            X509ExtendedTrustManager trust = null;
            if (files[2] != null)
            {
                final List<X509Certificate> cas = Pem.certificates(files[2], caPath.toString());
                final KeyStore store = KeyStore.getInstance("PKCS12");
                store.load(null, null);
                for (int i = 0; i < cas.size(); i++)
                {
                    store.setCertificateEntry("ca-" + i, cas.get(i));
                }
                final TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                factory.init(store);
                trust = (X509ExtendedTrustManager)factory.getTrustManagers()[0];
            }
            return new Material(generation, fingerprint, alias, chain, privateKey, keys, trust);
        }
        catch (final GeneralSecurityException | IOException e)
        {
            throw new IllegalArgumentException("cannot set up TLS from " + certificatePath + ", " + keyPath + ", " + caPath + ": " +
                e.getMessage(), e);
        }
    }

    private static byte[] fingerprint(final byte[][] files)
    {
        final MessageDigest digest = sha256();
        for (final byte[] file : files)
        {
            final int length = file == null ? -1 : file.length;
            digest.update(new byte[] {(byte)(length >>> 24), (byte)(length >>> 16), (byte)(length >>> 8), (byte)length});
            if (file != null)
            {
                digest.update(file);
            }
        }
        return digest.digest();
    }

    private static byte[] digest(final byte[] bytes)
    {
        return sha256().digest(bytes);
    }

    private static MessageDigest sha256()
    {
        try
        {
            return MessageDigest.getInstance("SHA-256");
        }
        catch (final NoSuchAlgorithmException e)
        {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** The material a handshake's alias came from (the current one, or the one just before it). */
    private Material of(final String alias)
    {
        final Material now = current;
        if (now.alias.equals(alias))
        {
            return now;
        }
        final Material before = previous;
        return before != null && before.alias.equals(alias) ? before : null;
    }

    /**
     * Presents the current certificate. Each load has its own alias, so a handshake asks for the
     * chain and key of the load it chose from even if a reload happens in between. The issuers a
     * peer names are not used to choose: there is one certificate, and the peer decides.
     */
    private final class Keys extends X509ExtendedKeyManager
    {
        @Override
        public String[] getClientAliases(final String keyType, final Principal[] issuers)
        {
            return current.keys.getClientAliases(keyType, null);
        }

        @Override
        public String chooseClientAlias(final String[] keyType, final Principal[] issuers, final Socket socket)
        {
            return current.keys.chooseClientAlias(keyType, null, socket);
        }

        @Override
        public String chooseEngineClientAlias(final String[] keyType, final Principal[] issuers, final SSLEngine engine)
        {
            return current.keys.chooseEngineClientAlias(keyType, null, engine);
        }

        @Override
        public String[] getServerAliases(final String keyType, final Principal[] issuers)
        {
            return current.keys.getServerAliases(keyType, null);
        }

        @Override
        public String chooseServerAlias(final String keyType, final Principal[] issuers, final Socket socket)
        {
            return current.keys.chooseServerAlias(keyType, null, socket);
        }

        @Override
        public String chooseEngineServerAlias(final String keyType, final Principal[] issuers, final SSLEngine engine)
        {
            return current.keys.chooseEngineServerAlias(keyType, null, engine);
        }

        @Override
        public X509Certificate[] getCertificateChain(final String alias)
        {
            final Material material = of(alias);
            return material == null ? null : material.chain.clone();
        }

        @Override
        public PrivateKey getPrivateKey(final String alias)
        {
            final Material material = of(alias);
            return material == null ? null : material.key;
        }
    }

    /** Verifies peers against the current CA bundle. */
    private final class Trust extends X509ExtendedTrustManager
    {
        @Override
        public void checkClientTrusted(final X509Certificate[] chain, final String authType, final Socket socket) throws CertificateException
        {
            current.trust.checkClientTrusted(chain, authType, socket);
        }

        @Override
        public void checkServerTrusted(final X509Certificate[] chain, final String authType, final Socket socket) throws CertificateException
        {
            current.trust.checkServerTrusted(chain, authType, socket);
        }

        @Override
        public void checkClientTrusted(final X509Certificate[] chain, final String authType, final SSLEngine engine) throws CertificateException
        {
            current.trust.checkClientTrusted(chain, authType, engine);
        }

        @Override
        public void checkServerTrusted(final X509Certificate[] chain, final String authType, final SSLEngine engine) throws CertificateException
        {
            current.trust.checkServerTrusted(chain, authType, engine);
        }

        @Override
        public void checkClientTrusted(final X509Certificate[] chain, final String authType) throws CertificateException
        {
            current.trust.checkClientTrusted(chain, authType);
        }

        @Override
        public void checkServerTrusted(final X509Certificate[] chain, final String authType) throws CertificateException
        {
            current.trust.checkServerTrusted(chain, authType);
        }

        @Override
        public X509Certificate[] getAcceptedIssuers()
        {
            return current.trust.getAcceptedIssuers();
        }
    }
}
