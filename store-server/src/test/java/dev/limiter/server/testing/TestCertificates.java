package dev.limiter.server.testing;

import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.asn1.sec.ECPrivateKey;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.SubjectPublicKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Certificates for TLS tests, made by the test itself: a CA, and certificates it signs for
 * 127.0.0.1 / localhost (nodes and clients alike), written as the PEM files a node and a client
 * are configured with. Public for the benchmarks' tests (store-server's test jar).
 */
public final class TestCertificates
{
    private static final AtomicLong SERIALS = new AtomicLong(System.nanoTime());

    /** A certificate and its key as files: what --tls-cert / --tls-key name. */
    public record Issued(Path certificate, Path key)
    {
    }

    private final String name;
    private final KeyPair caKeys;
    private final X509Certificate caCertificate;
    private final Path dir;

    /** A new CA named {@code name}; its files go under {@code dir}. */
    public TestCertificates(final Path dir, final String name)
    {
        this.dir = dir;
        this.name = name;
        try
        {
            Files.createDirectories(dir);
            caKeys = keyPair();
            final X500Name subject = new X500Name("CN=" + name);
            final JcaX509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(subject, serial(),
                notBefore(), notAfter(), subject, caKeys.getPublic());
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
            builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
            caCertificate = sign(builder, caKeys);
            write(dir.resolve(name + "-ca.pem"), "CERTIFICATE", caCertificate.getEncoded());
        }
        catch (final GeneralSecurityException | IOException | org.bouncycastle.operator.OperatorCreationException e)
        {
            throw new IllegalStateException(e);
        }
    }

    /** The CA bundle file (what --tls-ca names). */
    public Path ca()
    {
        return dir.resolve(name + "-ca.pem");
    }

    /** How a key is written: the three forms of unencrypted PEM keys that tools write. */
    public enum KeyForm
    {
        /** {@code BEGIN PRIVATE KEY}, an EC key. */
        PKCS8,
        /** {@code BEGIN RSA PRIVATE KEY}, an RSA key (as cert-manager and {@code openssl genrsa} write it). */
        PKCS1,
        /** {@code BEGIN EC PRIVATE KEY}, an EC key (as {@code openssl ecparam -genkey} writes it). */
        SEC1
    }

    /**
     * A certificate for 127.0.0.1 and localhost, signed by this CA, usable by a server and a client; its key in PKCS#8.
     */
    public Issued issue(final String commonName)
    {
        return issue(commonName, KeyForm.PKCS8);
    }

    /** A certificate for 127.0.0.1 and localhost, signed by this CA, with its key written in {@code form}. */
    public Issued issue(final String commonName, final KeyForm form)
    {
        try
        {
            final KeyPair keys = form == KeyForm.PKCS1 ? rsaKeyPair() : keyPair();
            final JcaX509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(new X500Name("CN=" + name),
                serial(), notBefore(), notAfter(), new X500Name("CN=" + commonName), keys.getPublic());
            builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
                new GeneralName(GeneralName.iPAddress, "127.0.0.1"), new GeneralName(GeneralName.dNSName,
                    "localhost")}));
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            final X509Certificate certificate = sign(builder, caKeys);
            final Path cert = dir.resolve(commonName + ".pem");
            final Path key = dir.resolve(commonName + "-key.pem");
            write(cert, "CERTIFICATE", certificate.getEncoded());
            switch (form)
            {
                case PKCS8 -> write(key, "PRIVATE KEY", keys.getPrivate().getEncoded());
                case PKCS1 -> write(key, "RSA PRIVATE KEY", pkcs1(keys));
                case SEC1 -> write(key, "EC PRIVATE KEY", sec1(keys));
            }
            return new Issued(cert, key);
        }
        catch (final GeneralSecurityException | IOException | org.bouncycastle.operator.OperatorCreationException e)
        {
            throw new IllegalStateException(e);
        }
    }

    /** PKCS#8 wraps the PKCS#1 structure: unwrapped, it is that form. */
    private static byte[] pkcs1(final KeyPair keys) throws IOException
    {
        return PrivateKeyInfo.getInstance(keys.getPrivate().getEncoded()).parsePrivateKey().toASN1Primitive()
            .getEncoded();
    }

    /**
     * SEC1 as openssl writes it: the key with its curve (which PKCS#8 keeps outside, in the algorithm) and its public
     * point.
     */
    private static byte[] sec1(final KeyPair keys) throws IOException
    {
        final PrivateKeyInfo info = PrivateKeyInfo.getInstance(keys.getPrivate().getEncoded());
        final ECPrivateKey inner = ECPrivateKey.getInstance(info.parsePrivateKey());
        final SubjectPublicKeyInfo publicKey = SubjectPublicKeyInfo.getInstance(keys.getPublic().getEncoded());
        return new ECPrivateKey(256, inner.getKey(), publicKey.getPublicKeyData(),
            info.getPrivateKeyAlgorithm().getParameters()).getEncoded();
    }

    private static KeyPair rsaKeyPair() throws GeneralSecurityException
    {
        final KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
        generator.initialize(2048);
        return generator.generateKeyPair();
    }

    private static KeyPair keyPair() throws GeneralSecurityException
    {
        final KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"));
        return generator.generateKeyPair();
    }

    private static X509Certificate sign(final JcaX509v3CertificateBuilder builder, final KeyPair issuer)
        throws org.bouncycastle.operator.OperatorCreationException, java.security.cert.CertificateException
    {
        final ContentSigner signer = new JcaContentSignerBuilder("SHA256withECDSA").build(issuer.getPrivate());
        final X509CertificateHolder holder = builder.build(signer);
        return new JcaX509CertificateConverter().getCertificate(holder);
    }

    private static BigInteger serial()
    {
        return BigInteger.valueOf(SERIALS.incrementAndGet());
    }

    private static Date notBefore()
    {
        return new Date(System.currentTimeMillis() - 3_600_000L);
    }

    private static Date notAfter()
    {
        return new Date(System.currentTimeMillis() + 86_400_000L);
    }

    private static void write(final Path file, final String type, final byte[] der)
    {
        try
        {
            Files.writeString(file, "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64,
                "\n".getBytes(StandardCharsets.US_ASCII)) .encodeToString(der) + "\n-----END " + type + "-----\n",
                StandardCharsets.US_ASCII);
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException(e);
        }
    }
}
