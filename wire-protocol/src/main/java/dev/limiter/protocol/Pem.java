package dev.limiter.protocol;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.net.ssl.SSLContext;

/**
 * The PEM files TLS is configured with, read with the JDK alone (no JVM flags, no extra library):
 * X.509 certificates ({@code BEGIN CERTIFICATE}, a chain or a bundle of CAs) and unencrypted
 * private keys in the three forms tools write: PKCS#8 ({@code BEGIN PRIVATE KEY}: RSA, EC or
 * EdDSA), PKCS#1 ({@code BEGIN RSA PRIVATE KEY}, what cert-manager and {@code openssl genrsa}
 * write) and SEC1 ({@code BEGIN EC PRIVATE KEY}, {@code openssl ecparam -genkey}). Encrypted keys
 * are refused, with the command that decrypts them. Every failure names the file and what to do.
 */
public final class Pem
{
    private static final Pattern KEY_BLOCK = Pattern.compile(
        "-----BEGIN ((?:RSA |EC |ENCRYPTED )?PRIVATE KEY)-----(.*?)-----END \\1-----", Pattern.DOTALL);
    private static final String DECRYPT = "openssl pkey -in %s -out PLAIN.pem (it asks for the passphrase; keep PLAIN.pem readable " +
        "by the service only, chmod 600)";
    /** rsaEncryption, 1.2.840.113549.1.1.1, with its NULL parameters: PKCS#1 keys' algorithm in PKCS#8. */
    private static final byte[] RSA_ALGORITHM = {0x30, 0x0d, 0x06, 0x09, 0x2a, (byte)0x86, 0x48, (byte)0x86, (byte)0xf7, 0x0d, 0x01, 0x01,
        0x01, 0x05, 0x00};
    /** id-ecPublicKey, 1.2.840.10045.2.1: SEC1 keys' algorithm in PKCS#8 (the curve follows it). */
    private static final byte[] EC_PUBLIC_KEY = {0x06, 0x07, 0x2a, (byte)0x86, 0x48, (byte)0xce, 0x3d, 0x02, 0x01};

    private Pem()
    {
    }

    /** Every certificate in the file, in order (a chain: the leaf first). */
    public static List<X509Certificate> certificates(final Path file)
    {
        return certificates(read(file, "certificate"), file.toString());
    }

    /** Every certificate in {@code pem} (read from {@code source}, which errors name), in order. */
    public static List<X509Certificate> certificates(final byte[] pem, final String source)
    {
        try (InputStream in = new ByteArrayInputStream(pem))
        {
            final List<X509Certificate> certificates = new ArrayList<>();
            for (final Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in))
            {
                certificates.add((X509Certificate)certificate);
            }
            if (certificates.isEmpty())
            {
                throw new IllegalArgumentException(source + " holds no certificate (expected PEM: -----BEGIN CERTIFICATE-----)");
            }
            return certificates;
        }
        catch (final IOException e)
        {
            throw new IllegalArgumentException("cannot read certificate file " + source + ": " + e.getMessage(), e);
        }
        catch (final GeneralSecurityException e)
        {
            throw new IllegalArgumentException(source + " is not a PEM X.509 certificate file: " + e.getMessage(), e);
        }
    }

    /** The unencrypted private key in the file: PKCS#8, PKCS#1 (RSA) or SEC1 (EC). */
    public static PrivateKey privateKey(final Path file)
    {
        return privateKey(read(file, "private key"), file.toString());
    }

    /** The unencrypted private key in {@code pem} (read from {@code source}, which errors name). */
    public static PrivateKey privateKey(final byte[] pem, final String source)
    {
        final String text = new String(pem, StandardCharsets.US_ASCII);
        final Matcher m = KEY_BLOCK.matcher(text);
        if (!m.find())
        {
            throw new IllegalArgumentException(source + " holds no private key (expected PEM -----BEGIN PRIVATE KEY-----, " +
                "-----BEGIN RSA PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----); convert another form with: " +
                "openssl pkcs8 -topk8 -nocrypt -in KEY -out " + source);
        }
        final String type = m.group(1);
        String body = m.group(2);
        if (type.equals("ENCRYPTED PRIVATE KEY") || body.contains("Proc-Type: 4,ENCRYPTED"))
        {
            throw new IllegalArgumentException(source + " holds an encrypted private key (" + (type.equals("ENCRYPTED PRIVATE KEY") ?
                "BEGIN ENCRYPTED PRIVATE KEY" : "Proc-Type: 4,ENCRYPTED") + "), which is not read: write it unencrypted with " +
                String.format(DECRYPT, source));
        }
        if (body.indexOf(':') >= 0)
        {
            // RFC 1421 headers of a traditional key (a comment, say): base64 has no colon, and the decoder would skip one silently.
            body = body.lines().filter(line -> line.indexOf(':') < 0).collect(Collectors.joining("\n"));
        }
        final byte[] der;
        try
        {
            der = Base64.getMimeDecoder().decode(body.strip());
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException(source + ": the key (" + type + ") is not valid base64", e);
        }
        try
        {
            return switch (type)
            {
                case "RSA PRIVATE KEY" -> KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(pkcs8(RSA_ALGORITHM, der)));
                case "EC PRIVATE KEY" -> KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(
                    pkcs8(der(0x30, EC_PUBLIC_KEY, sec1Curve(der, source)), der)));
                default -> pkcs8Key(der, source);
            };
        }
        catch (final GeneralSecurityException | IndexOutOfBoundsException e)
        {
            throw new IllegalArgumentException(source + ": the " + type + " is not a valid " + (type.equals("RSA PRIVATE KEY") ? "PKCS#1 RSA" :
                "SEC1 EC") + " key: " + e.getMessage(), e);
        }
    }

    /**
     * Whether {@code key} is the private key of {@code certificate}: a signature made with one
     * verifies with the other. True for key types it cannot check this way (RSASSA-PSS).
     */
    public static boolean matches(final PrivateKey key, final X509Certificate certificate)
    {
        final String algorithm = switch (key.getAlgorithm())
        {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            case "Ed25519", "Ed448", "EdDSA" -> key.getAlgorithm();
            default -> null;
        };
        if (algorithm == null)
        {
            return true;
        }
        try
        {
            final byte[] probe = "limiter: does this key belong to this certificate?".getBytes(StandardCharsets.US_ASCII);
            final Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(probe);
            final byte[] signature = signer.sign();
            final Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(certificate.getPublicKey());
            verifier.update(probe);
            return verifier.verify(signature);
        }
        catch (final GeneralSecurityException e)
        {
            return false;
        }
    }

    private static byte[] read(final Path file, final String what)
    {
        try
        {
            return Files.readAllBytes(file);
        }
        catch (final IOException e)
        {
            throw new IllegalArgumentException("cannot read " + what + " file " + file + ": " + e.getMessage(), e);
        }
    }

    private static PrivateKey pkcs8Key(final byte[] der, final String source)
    {
        for (final String algorithm : new String[] {"RSA", "EC", "EdDSA", "RSASSA-PSS"})
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
        throw new IllegalArgumentException(source + ": the key is not an RSA, EC or EdDSA PKCS#8 key");
    }

    /** PrivateKeyInfo (PKCS#8) holding {@code key} of the algorithm {@code algorithm} (an encoded AlgorithmIdentifier). */
    private static byte[] pkcs8(final byte[] algorithm, final byte[] key)
    {
        return der(0x30, new byte[] {0x02, 0x01, 0x00}, algorithm, der(0x04, key));
    }

    /** The named curve (its encoded OID) of a SEC1 ECPrivateKey: SEQUENCE {version, privateKey, [0] parameters, [1] publicKey}. */
    private static byte[] sec1Curve(final byte[] sec1, final String source)
    {
        int at = contentStart(sec1, 0);
        final int end = at + contentLength(sec1, 0);
        while (at < end)
        {
            final int tag = sec1[at] & 0xff;
            final int next = contentStart(sec1, at) + contentLength(sec1, at);
            if (tag == 0xa0)
            {
                final int oid = contentStart(sec1, at);
                if ((sec1[oid] & 0xff) != 0x06)
                {
                    break;
                }
                return Arrays.copyOfRange(sec1, oid, contentStart(sec1, oid) + contentLength(sec1, oid));
            }
            at = next;
        }
        throw new IllegalArgumentException(source + ": the EC PRIVATE KEY does not name its curve; write it with: " +
            "openssl pkcs8 -topk8 -nocrypt -in KEY -out " + source);
    }

    /** Where the contents of the DER element at {@code at} begin. */
    private static int contentStart(final byte[] der, final int at)
    {
        final int first = der[at + 1] & 0xff;
        return first < 0x80 ? at + 2 : at + 2 + (first & 0x7f);
    }

    /** The length of the contents of the DER element at {@code at}. */
    private static int contentLength(final byte[] der, final int at)
    {
        final int first = der[at + 1] & 0xff;
        if (first < 0x80)
        {
            return first;
        }
        int length = 0;
        for (int i = 0; i < (first & 0x7f); i++)
        {
            length = (length << 8) | (der[at + 2 + i] & 0xff);
        }
        if (length < 0 || contentStart(der, at) + length > der.length)
        {
            throw new IndexOutOfBoundsException("a DER length runs past the end of the key");
        }
        return length;
    }

    /** One DER element: {@code tag}, its length, then {@code parts} one after another. */
    private static byte[] der(final int tag, final byte[]... parts)
    {
        int length = 0;
        for (final byte[] part : parts)
        {
            length += part.length;
        }
        final ByteArrayOutputStream out = new ByteArrayOutputStream(length + 6);
        out.write(tag);
        if (length < 0x80)
        {
            out.write(length);
        }
        else
        {
            final int bytes = length < 0x100 ? 1 : length < 0x10000 ? 2 : 3;
            out.write(0x80 | bytes);
            for (int i = bytes - 1; i >= 0; i--)
            {
                out.write(length >>> (8 * i));
            }
        }
        for (final byte[] part : parts)
        {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }

    /**
     * A TLS context for a client or server: with {@code certificate} and {@code key} it presents
     * them (a server, or a client under mutual TLS); with {@code trusted} it verifies the peer
     * against those CAs only (else the JDK's default trust). Read once: a long-lived server or
     * client that should follow rotated files uses {@link ReloadingTls} itself.
     *
     * @param certificate chain file, or null
     * @param key         its private key, or null (given together with {@code certificate})
     * @param trusted     CA bundle, or null
     */
    public static SSLContext context(final Path certificate, final Path key, final Path trusted)
    {
        return ReloadingTls.load(certificate, key, trusted).context();
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
