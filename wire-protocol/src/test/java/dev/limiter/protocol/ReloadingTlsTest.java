package dev.limiter.protocol;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Certificate files replaced on disk are served to new handshakes without a restart; bad replacements keep the old ones. */
@Timeout(60)
class ReloadingTlsTest
{
    @TempDir
    Path dir;

    /** What a rotation wrote: the files a server reads, and the PKI behind them. */
    private record Pki(OpenSsl openssl, Path caKey, Path ca)
    {
        /** A fresh key and a certificate for it signed by this CA, as two files. */
        Path[] issue(final String name)
        {
            final Path key = openssl.ecKey(name + "-key.pem");
            return new Path[] {openssl.signed(key, name, ca, caKey, name + ".crt"), key};
        }
    }

    private Pki pki(final OpenSsl openssl, final String name)
    {
        final Path caKey = openssl.ecKey(name + "-ca-key.pem");
        return new Pki(openssl, caKey, openssl.ca(caKey, name, name + "-ca.pem"));
    }

    @Test
    void newHandshakesSeeTheReplacedCertificateAndOpenConnectionsKeepTheirSession() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Pki pki = pki(openssl, "cluster");
        final Path[] a = pki.issue("a");
        final Path[] b = pki.issue("b");
        final Path cert = dir.resolve("tls.crt");
        final Path key = dir.resolve("tls.key");
        copy(a, cert, key);
        final List<String> events = new CopyOnWriteArrayList<>();
        final ReloadingTls tls = ReloadingTls.load(cert, key, null).listener((outcome, detail) -> events.add(outcome + ": " + detail));
        final Supplier<SSLContext> client = () -> Pem.context(null, null, pki.ca()); // a new client each time: no session to resume
        try (JdkTlsServer server = new JdkTlsServer(tls.context(), false))
        {
            assertEquals(serial(a[0]), JdkTlsServer.presented(client.get(), server.port()).getSerialNumber());
            assertEquals(ReloadingTls.Outcome.UNCHANGED, tls.reload(), "nothing changed yet");
            try (SSLSocket before = JdkTlsServer.connect(client.get(), server.port()))
            {
                copy(b, cert, key);
                assertEquals(ReloadingTls.Outcome.RELOADED, tls.reload());
                assertEquals(serial(b[0]), JdkTlsServer.presented(client.get(), server.port()).getSerialNumber(), "a new connection sees B");
                assertEquals(serial(b[0]), tls.certificate().getSerialNumber());
                JdkTlsServer.roundTrip(before);
                assertEquals(serial(a[0]), ((X509Certificate)before.getSession().getPeerCertificates()[0]).getSerialNumber(),
                    "the connection opened before keeps its session");
            }
            assertEquals(1, tls.reloads());
            assertEquals(1, events.size(), events.toString());
            assertTrue(events.get(0).startsWith("RELOADED: certificate 'CN=b'"), events.toString());
        }
    }

    @Test
    void aCorruptReplacementKeepsTheCertificateInUseAndIsReportedOnce() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Pki pki = pki(openssl, "cluster");
        final Path[] a = pki.issue("a");
        final Path[] b = pki.issue("b");
        final Path cert = dir.resolve("tls.crt");
        final Path key = dir.resolve("tls.key");
        copy(a, cert, key);
        final List<String> events = new CopyOnWriteArrayList<>();
        final ReloadingTls tls = ReloadingTls.load(cert, key, null).listener((outcome, detail) -> events.add(outcome + ": " + detail));
        final Supplier<SSLContext> client = () -> Pem.context(null, null, pki.ca()); // a new client each time: no session to resume
        try (JdkTlsServer server = new JdkTlsServer(tls.context(), false))
        {
            Files.writeString(cert, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
            assertEquals(ReloadingTls.Outcome.FAILED, tls.reload());
            assertEquals(serial(a[0]), JdkTlsServer.presented(client.get(), server.port()).getSerialNumber(), "still A");
            assertEquals(ReloadingTls.Outcome.UNCHANGED, tls.reload(), "the same bad file is reported once");
            assertTrue(tls.refusing(), "and stays refused");
            assertEquals(1, events.size(), events.toString());
            assertTrue(events.get(0).startsWith("FAILED: ") && events.get(0).contains(cert.toString()) &&
                events.get(0).contains("still using certificate 'CN=a'"), events.get(0));

            // A rotation that writes the certificate first: B's certificate with A's key does not load either.
            Files.copy(b[0], cert, StandardCopyOption.REPLACE_EXISTING);
            assertEquals(ReloadingTls.Outcome.FAILED, tls.reload());
            assertTrue(events.get(1).contains("is not the key of the certificate"), events.get(1));
            assertEquals(serial(a[0]), JdkTlsServer.presented(client.get(), server.port()).getSerialNumber(), "still A");

            Files.delete(key);
            assertEquals(ReloadingTls.Outcome.FAILED, tls.reload(), "a missing file");
            assertTrue(events.get(2).contains("cannot read TLS file " + key), events.get(2));
            assertEquals(serial(a[0]), JdkTlsServer.presented(client.get(), server.port()).getSerialNumber(), "still A");

            Files.copy(b[1], key);
            assertEquals(ReloadingTls.Outcome.RELOADED, tls.reload(), "once the key is there too");
            assertFalse(tls.refusing());
            assertEquals(serial(b[0]), JdkTlsServer.presented(client.get(), server.port()).getSerialNumber());
        }
    }

    @Test
    void aSymlinkSwapAsKubernetesDoesForSecretVolumesIsFollowed() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Pki pki = pki(openssl, "cluster");
        final Path volume = Files.createDirectories(dir.resolve("volume"));
        final Path first = Files.createDirectories(volume.resolve("..2026_12_08_01"));
        final Path second = Files.createDirectories(volume.resolve("..2026_12_08_02"));
        final Path[] a = pki.issue("a");
        final Path[] b = pki.issue("b");
        copy(a, first.resolve("tls.crt"), first.resolve("tls.key"));
        copy(b, second.resolve("tls.crt"), second.resolve("tls.key"));
        Files.createSymbolicLink(volume.resolve("..data"), first.getFileName());
        Files.createSymbolicLink(volume.resolve("tls.crt"), Path.of("..data", "tls.crt"));
        Files.createSymbolicLink(volume.resolve("tls.key"), Path.of("..data", "tls.key"));

        final ReloadingTls tls = ReloadingTls.load(volume.resolve("tls.crt"), volume.resolve("tls.key"), null);
        final Supplier<SSLContext> client = () -> Pem.context(null, null, pki.ca()); // a new client each time: no session to resume
        try (JdkTlsServer server = new JdkTlsServer(tls.context(), false))
        {
            assertEquals(serial(a[0]), JdkTlsServer.presented(client.get(), server.port()).getSerialNumber());
            // The kubelet's atomic update: a new ..data link renamed over the old one.
            final Path next = volume.resolve("..data_tmp");
            Files.createSymbolicLink(next, second.getFileName());
            Files.move(next, volume.resolve("..data"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            assertEquals(ReloadingTls.Outcome.RELOADED, tls.reload());
            assertEquals(serial(b[0]), JdkTlsServer.presented(client.get(), server.port()).getSerialNumber());
        }
    }

    @Test
    void aReplacedCaBundleDecidesWhichClientCertificatesNewHandshakesAccept() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Pki oldCa = pki(openssl, "old");
        final Pki newCa = pki(openssl, "new");
        final Path[] server = oldCa.issue("server");
        final Path[] oldClient = oldCa.issue("old-client");
        final Path[] newClient = newCa.issue("new-client");
        final Path bundle = dir.resolve("ca.pem");
        Files.copy(oldCa.ca(), bundle);
        final ReloadingTls tls = ReloadingTls.load(server[0], server[1], bundle);
        try (JdkTlsServer port = new JdkTlsServer(tls.context(), true))
        {
            final Supplier<SSLContext> withOld = () -> Pem.context(oldClient[0], oldClient[1], oldCa.ca());
            final Supplier<SSLContext> withNew = () -> Pem.context(newClient[0], newClient[1], oldCa.ca());
            JdkTlsServer.presented(withOld.get(), port.port());
            assertThrows(IOException.class, () -> JdkTlsServer.presented(withNew.get(), port.port()), "the new CA is not trusted yet");

            Files.writeString(bundle, Files.readString(newCa.ca())); // the bundle now holds the new CA only
            assertEquals(ReloadingTls.Outcome.RELOADED, tls.reload());
            JdkTlsServer.presented(withNew.get(), port.port());
            assertThrows(IOException.class, () -> JdkTlsServer.presented(withOld.get(), port.port()), "the old CA is no longer trusted");
        }
    }

    @Test
    void watchingChecksTheFilesOnItsOwnAndStopsOnClose() throws Exception
    {
        final OpenSsl openssl = new OpenSsl(dir);
        final Pki pki = pki(openssl, "cluster");
        final Path[] a = pki.issue("a");
        final Path[] b = pki.issue("b");
        final Path cert = dir.resolve("tls.crt");
        final Path key = dir.resolve("tls.key");
        copy(a, cert, key);
        final CountDownLatch reloaded = new CountDownLatch(1);
        try (ReloadingTls tls = ReloadingTls.load(cert, key, null).listener((outcome, detail) -> reloaded.countDown())
            .watch(Duration.ofMillis(100)))
        {
            copy(b, cert, key);
            assertTrue(reloaded.await(10, TimeUnit.SECONDS), "the watcher loaded B");
            assertEquals(serial(b[0]), tls.certificate().getSerialNumber());
            assertNotEquals(serial(a[0]), serial(b[0]));
        }
        assertThrows(IllegalArgumentException.class, () -> ReloadingTls.load(cert, key, null).watch(Duration.ofMillis(10)));
    }

    private static void copy(final Path[] certificateAndKey, final Path cert, final Path key) throws IOException
    {
        // Key first: a server checking in between sees the old certificate with the new key and keeps the old pair.
        Files.copy(certificateAndKey[1], key, StandardCopyOption.REPLACE_EXISTING);
        Files.copy(certificateAndKey[0], cert, StandardCopyOption.REPLACE_EXISTING);
    }

    private static java.math.BigInteger serial(final Path certificate)
    {
        return Pem.certificates(certificate).get(0).getSerialNumber();
    }
}
