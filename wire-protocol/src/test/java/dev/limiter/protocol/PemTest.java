package dev.limiter.protocol;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The key forms operators' tools write, each read and each serving TLS; encrypted keys refused with the fix. */
@Timeout(60)
class PemTest
{
    @TempDir
    Path dir;

    @Test
    void pkcs1AndSec1KeysAreReadAsTheSameKeysAsTheirPkcs8Forms() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Path rsa = openssl.rsaKey("rsa.pem");
        final Path rsa1 = openssl.pkcs1(rsa, "rsa-pkcs1.pem");
        final Path ec = openssl.ecKey("ec.pem");
        final Path ec1 = openssl.sec1(ec, "ec-sec1.pem");
        assertTrue(Files.readString(rsa1).startsWith("-----BEGIN RSA PRIVATE KEY-----"), Files.readString(rsa1));
        assertTrue(Files.readString(ec1).startsWith("-----BEGIN EC PRIVATE KEY-----"), Files.readString(ec1));

        assertArrayEquals(Pem.privateKey(rsa).getEncoded(), Pem.privateKey(rsa1).getEncoded(), "PKCS#1 is the PKCS#8 key");
        final PrivateKey fromSec1 = Pem.privateKey(ec1);
        assertEquals("EC", fromSec1.getAlgorithm());
        assertEquals(((java.security.interfaces.ECPrivateKey)Pem.privateKey(ec)).getS(), ((java.security.interfaces.ECPrivateKey)fromSec1).getS(),
            "SEC1 is the PKCS#8 key");
    }

    @Test
    void aSec1KeyAfterItsEcParametersAndKeysWithWindowsLineEndingsAreRead() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        openssl.run("ecparam", "-name", "prime256v1", "-genkey", "-out", "ecparam.pem"); // EC PARAMETERS, then EC PRIVATE KEY
        assertTrue(Files.readString(openssl.file("ecparam.pem")).startsWith("-----BEGIN EC PARAMETERS-----"));
        final Path certificate = openssl.selfSigned(openssl.file("ecparam.pem"), "ecparam", "ecparam-cert.pem");
        assertTrue(Pem.matches(Pem.privateKey(openssl.file("ecparam.pem")), Pem.certificates(certificate).get(0)));

        final Path rsa1 = openssl.pkcs1(openssl.rsaKey("rsa.pem"), "rsa1.pem");
        final Path crlf = dir.resolve("rsa1-crlf.pem");
        Files.writeString(crlf, Files.readString(rsa1).replace("\n", "\r\n"));
        assertArrayEquals(Pem.privateKey(rsa1).getEncoded(), Pem.privateKey(crlf).getEncoded());
    }

    @Test
    void aServerWithAKeyInEachFormPresentsItsCertificate() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Path rsa = openssl.rsaKey("rsa.pem");
        final Path ec = openssl.ecKey("ec.pem");
        openssl.run("genpkey", "-algorithm", "ed25519", "-out", "ed25519.pem");
        final Map<String, Path> keys = Map.of(
            "PKCS#8 RSA", rsa,
            "PKCS#1 RSA", openssl.pkcs1(rsa, "rsa-pkcs1.pem"),
            "PKCS#8 EC", ec,
            "SEC1 EC", openssl.sec1(ec, "ec-sec1.pem"),
            "PKCS#8 Ed25519", openssl.file("ed25519.pem"));
        for (final Map.Entry<String, Path> form : keys.entrySet())
        {
            final Path certificate = openssl.selfSigned(form.getValue(), form.getKey().replace(' ', '-'), form.getKey().replace(' ', '-') + ".crt");
            try (JdkTlsServer server = new JdkTlsServer(Pem.context(certificate, form.getValue(), null), false))
            {
                final X509Certificate shown = JdkTlsServer.presented(Pem.context(null, null, certificate), server.port());
                assertEquals(Pem.certificates(certificate).get(0), shown, form.getKey());
            }
        }
    }

    @Test
    void encryptedKeysAreRefusedWithTheCommandThatDecryptsThem() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Path rsa = openssl.rsaKey("rsa.pem");
        final Path ec = openssl.ecKey("ec.pem");
        openssl.run("pkcs8", "-topk8", "-in", rsa.toString(), "-passout", "pass:secret", "-out", "encrypted-pkcs8.pem");
        openssl.run("rsa", "-in", rsa.toString(), "-traditional", "-aes256", "-passout", "pass:secret", "-out", "encrypted-pkcs1.pem");
        openssl.run("ec", "-in", ec.toString(), "-aes256", "-passout", "pass:secret", "-out", "encrypted-sec1.pem");
        for (final String name : List.of("encrypted-pkcs8.pem", "encrypted-pkcs1.pem", "encrypted-sec1.pem"))
        {
            final Path file = openssl.file(name);
            final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> Pem.privateKey(file), name);
            assertTrue(refused.getMessage().contains("encrypted private key") && refused.getMessage().contains("openssl pkey -in " + file),
                refused.getMessage());
            // The command it gives works: the result is read.
            openssl.run("pkey", "-in", file.toString(), "-passin", "pass:secret", "-out", "plain-" + name);
            assertArrayEquals(Pem.privateKey(name.contains("sec1") ? ec : rsa).getEncoded(), Pem.privateKey(openssl.file("plain-" + name)).getEncoded(),
                name);
        }
    }

    @Test
    void aFileWithNoKeyAndAKeyThatIsNotTheCertificatesAreRefusedSayingWhatToDo() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Path key = openssl.ecKey("key.pem");
        final Path certificate = openssl.selfSigned(key, "node", "node.crt");
        final IllegalArgumentException notAKey = assertThrows(IllegalArgumentException.class, () -> Pem.privateKey(certificate));
        assertTrue(notAKey.getMessage().contains("holds no private key") && notAKey.getMessage().contains("openssl pkcs8"), notAKey.getMessage());

        final Path other = openssl.ecKey("other.pem");
        assertFalse(Pem.matches(Pem.privateKey(other), Pem.certificates(certificate).get(0)));
        final IllegalArgumentException mismatch = assertThrows(IllegalArgumentException.class, () -> Pem.context(certificate, other, null));
        assertTrue(mismatch.getMessage().contains("is not the key of the certificate in " + certificate), mismatch.getMessage());

        final Path garbage = dir.resolve("garbage.pem");
        Files.writeString(garbage, "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n", StandardCharsets.US_ASCII);
        final IllegalArgumentException invalid = assertThrows(IllegalArgumentException.class, () -> Pem.privateKey(garbage));
        assertTrue(invalid.getMessage().contains("not a valid PKCS#1 RSA key"), invalid.getMessage());
    }
}
