package dev.limiter.protocol;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The PEM files TLS is configured with, read with the JDK alone (no JVM flags, no extra library):
 * X.509 certificates ({@code BEGIN CERTIFICATE}, a chain or a bundle of CAs) and unencrypted
 * PKCS#8 private keys ({@code BEGIN PRIVATE KEY}, RSA or EC; convert others with
 * {@code openssl pkcs8 -topk8 -nocrypt}). Every failure names the file and what to do.
 */
public final class Pem
{
    private static final Pattern PRIVATE_KEY = Pattern.compile("-----BEGIN PRIVATE KEY-----(.*?)-----END PRIVATE KEY-----", Pattern.DOTALL);

    private Pem()
    {
    }

    /** Every certificate in the file, in order (a chain: the leaf first). */
    public static List<X509Certificate> certificates(final Path file)
    {
        try (InputStream in = Files.newInputStream(file))
        {
            final List<X509Certificate> certificates = new ArrayList<>();
            for (final Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in))
            {
                certificates.add((X509Certificate)certificate);
            }
            if (certificates.isEmpty())
            {
                throw new IllegalArgumentException(file + " holds no certificate (expected PEM: -----BEGIN CERTIFICATE-----)");
            }
            return certificates;
        }
        catch (final IOException e)
        {
            throw new IllegalArgumentException("cannot read certificate file " + file + ": " + e.getMessage(), e);
        }
        catch (final GeneralSecurityException e)
        {
            throw new IllegalArgumentException(file + " is not a PEM X.509 certificate file: " + e.getMessage(), e);
        }
    }

    /** The unencrypted PKCS#8 private key in the file. */
    public static PrivateKey privateKey(final Path file)
    {
        final String text;
        try
        {
            text = Files.readString(file, StandardCharsets.US_ASCII);
        }
        catch (final IOException e)
        {
            throw new IllegalArgumentException("cannot read private key file " + file + ": " + e.getMessage(), e);
        }
        final Matcher m = PRIVATE_KEY.matcher(text);
        if (!m.find())
        {
            throw new IllegalArgumentException(file + " holds no unencrypted PKCS#8 key (-----BEGIN PRIVATE KEY-----); " +
                "convert it with: openssl pkcs8 -topk8 -nocrypt -in KEY -out " + file);
        }
        final byte[] der;
        try
        {
            der = Base64.getMimeDecoder().decode(m.group(1).strip());
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException(file + ": the key is not valid base64", e);
        }
        for (final String algorithm : new String[] {"RSA", "EC", "Ed25519"})
        {
            try
            {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            }
            catch (final GeneralSecurityException tryNext)
            {
                // not this algorithm
            }
        }
        throw new IllegalArgumentException(file + ": the key is not an RSA, EC or Ed25519 PKCS#8 key");
    }

    /**
     * A TLS context for a client or server: with {@code certificate} and {@code key} it presents
     * them (a server, or a client under mutual TLS); with {@code trusted} it verifies the peer
     * against those CAs only (else the JDK's default trust).
     *
     * @param certificate chain file, or null
     * @param key         its private key, or null (given together with {@code certificate})
     * @param trusted     CA bundle, or null
     */
    public static SSLContext context(final Path certificate, final Path key, final Path trusted)
    {
        if ((certificate == null) != (key == null))
        {
            throw new IllegalArgumentException("a certificate needs its private key and a key its certificate: give both or neither");
        }
        try
        {
            final SSLContext context = SSLContext.getInstance("TLS");
            KeyManagerFactory keys = null;
            if (certificate != null)
            {
                final KeyStore store = KeyStore.getInstance("PKCS12");
                store.load(null, null);
                store.setKeyEntry("self", privateKey(key), new char[0], certificates(certificate).toArray(new Certificate[0]));
                keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                keys.init(store, new char[0]);
            }
            TrustManagerFactory trust = null;
            if (trusted != null)
            {
                trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                trust.init(trustStore(trusted));
            }
            context.init(keys == null ? null : keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(), new SecureRandom());
            return context;
        }
        catch (final GeneralSecurityException | IOException e)
        {
            throw new IllegalArgumentException("cannot build a TLS context from " + certificate + ", " + key + ", " + trusted + ": " +
                e.getMessage(), e);
        }
    }

    /** A key store holding every certificate of the file as a trusted CA. */
    public static KeyStore trustStore(final Path trusted) throws GeneralSecurityException, IOException
    {
        final KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        int i = 0;
        for (final X509Certificate ca : certificates(trusted))
        {
            store.setCertificateEntry("ca-" + i++, ca);
        }
        return store;
    }
}
