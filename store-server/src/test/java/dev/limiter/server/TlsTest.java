package dev.limiter.server;

import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.Pem;
import dev.limiter.protocol.ReloadingTls;
import dev.limiter.server.net.TlsClientAuth;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.TestCertificates;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.cert.X509Certificate;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** TLS on the data and admin ports, with certificates the test makes; mutual TLS as an option. */
@Timeout(60)
class TlsTest
{
    @TempDir
    Path dir;

    @Test
    void withTlsTheDataAndAdminPortsSpeakOnlyTlsAndClientsVerifyTheNode() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "limiter-test");
        final TestCertificates.Issued node = pki.issue("node");
        final TestCertificates stranger = new TestCertificates(dir.resolve("other"), "someone-else");
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).tlsCert(node.certificate()).tlsKey(node.key()),
            new ManualClock(SECOND)).start())
        {
            final SSLContext trusting = Pem.context(null, null, pki.ca());
            assertEquals(MessageType.PONG, ping(trusting, server.port()), "a client trusting the CA is served");
            assertThrows(SSLException.class, () -> ping(Pem.context(null, null, stranger.ca()), server.port()),
                "a client that does not trust the node's CA refuses it");
            assertTrue(plainPingGetsNoAnswer(server.port()), "plain TCP gets no frame back");

            final HttpClient https = HttpClient.newBuilder().sslContext(trusting).build();
            final HttpResponse<String> health = https.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + server.adminPort() + "/health"))
                .build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, health.statusCode());
            assertThrows(IOException.class, () -> HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.adminPort() + "/health")).build(), HttpResponse.BodyHandlers.ofString()));
            awaitCounted(server, "data", "tls-handshake");
            // The certificate's expiry is a metric (the alert rules warn two weeks ahead): a day from now.
            final java.util.regex.Matcher expiry = java.util.regex.Pattern
                .compile("(?m)^limiter_tls_certificate_expiry_timestamp_seconds (\\S+)$").matcher(server.metrics().scrape());
            assertTrue(expiry.find(), server.metrics().scrape());
            final double inSeconds = Double.parseDouble(expiry.group(1)) - System.currentTimeMillis() / 1000.0;
            assertTrue(inSeconds > 86_000 && inSeconds <= 86_400, "expires in " + inSeconds + " s");
        }
    }

    @Test
    void withMutualTlsOnlyClientsWithACertificateFromTheCaAreServed() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "limiter-test");
        final TestCertificates.Issued node = pki.issue("node");
        final TestCertificates.Issued service = pki.issue("orders-service");
        final TestCertificates stranger = new TestCertificates(dir.resolve("other"), "someone-else");
        final TestCertificates.Issued impostor = stranger.issue("impostor");
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).tlsCert(node.certificate()).tlsKey(node.key())
            .tlsCa(pki.ca()).tlsClientAuth(TlsClientAuth.REQUIRE), new ManualClock(SECOND)).start())
        {
            assertEquals(MessageType.PONG, ping(Pem.context(service.certificate(), service.key(), pki.ca()), server.port()));
            assertThrows(IOException.class, () -> ping(Pem.context(null, null, pki.ca()), server.port()), "no client certificate");
            assertThrows(IOException.class, () -> ping(Pem.context(impostor.certificate(), impostor.key(), pki.ca()), server.port()),
                "a certificate from another CA");
            final HttpClient withCertificate = HttpClient.newBuilder().sslContext(Pem.context(service.certificate(), service.key(), pki.ca())).build();
            assertEquals(200, withCertificate.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + server.adminPort() + "/health")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode());
            final HttpClient without = HttpClient.newBuilder().sslContext(Pem.context(null, null, pki.ca())).build();
            assertThrows(IOException.class, () -> without.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + server.adminPort() +
                "/health")).build(), HttpResponse.BodyHandlers.ofString()));
            awaitCounted(server, "admin", "tls-handshake");
        }
    }

    @Test
    void theSdkDecidesOverTlsAndMutualTlsAndRefusesANodeItDoesNotTrust() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "limiter-test");
        final TestCertificates.Issued node = pki.issue("node");
        final TestCertificates.Issued service = pki.issue("orders-service", TestCertificates.KeyForm.PKCS1); // the SDK's client key as cert-manager writes it
        final TestCertificates stranger = new TestCertificates(dir.resolve("other"), "someone-else");
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).tlsCert(node.certificate()).tlsKey(node.key())
            .tlsCa(pki.ca()).tlsClientAuth(TlsClientAuth.REQUIRE), new ManualClock(SECOND)).start())
        {
            final String endpoint = "127.0.0.1:" + server.port();
            try (dev.limiter.client.LimiterClient client = dev.limiter.client.LimiterClient.builder().endpoints(endpoint)
                .tls(pki.ca()).tlsClientCertificate(service.certificate(), service.key()).deadline(java.time.Duration.ofSeconds(5)).build())
            {
                final dev.limiter.client.Decision decision = client.acquireBlocking(dev.limiter.client.Descriptor.of("acme", "/v1/orders/1"), 1);
                assertTrue(decision.allowed() && !decision.degraded(), "a node decided over mutual TLS: " + decision);
            }
            // No client certificate, or no trust in the node's CA: no node answers, and the SDK says why.
            for (final dev.limiter.client.LimiterClient.Builder builder : java.util.List.of(
                dev.limiter.client.LimiterClient.builder().endpoints(endpoint).tls(pki.ca()),
                dev.limiter.client.LimiterClient.builder().endpoints(endpoint).tls(stranger.ca())
                    .tlsClientCertificate(service.certificate(), service.key())))
            {
                try (dev.limiter.client.LimiterClient client = builder.deadline(java.time.Duration.ofMillis(500)).localFallback(false).build())
                {
                    assertThrows(dev.limiter.client.LimiterException.class,
                        () -> client.acquireBlocking(dev.limiter.client.Descriptor.of("acme", "/v1/orders/1"), 1));
                }
            }
        }
        assertThrows(IllegalArgumentException.class, () -> dev.limiter.client.LimiterClient.builder().endpoints("127.0.0.1:1")
            .tls(dir.resolve("missing-ca.pem")).build(), "a CA file that does not exist fails the build, naming it");
    }

    @Test
    void badTlsSettingsAreRefusedAtStartWithWhatToFix() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "limiter-test");
        final TestCertificates.Issued node = pki.issue("node");
        final IllegalArgumentException noKey = assertThrows(IllegalArgumentException.class,
            () -> new StoreServer(TestNode.config(dir, 0, 1).tlsCert(node.certificate())));
        assertTrue(noKey.getMessage().contains("--tls-cert and --tls-key go together"), noKey.getMessage());
        final IllegalArgumentException mtlsWithoutCa = assertThrows(IllegalArgumentException.class,
            () -> new StoreServer(TestNode.config(dir, 0, 1).tlsCert(node.certificate()).tlsKey(node.key()).tlsClientAuth(TlsClientAuth.REQUIRE)));
        assertTrue(mtlsWithoutCa.getMessage().contains("needs --tls-ca"), mtlsWithoutCa.getMessage());
        final IllegalArgumentException keyIsACertificate = assertThrows(IllegalArgumentException.class,
            () -> new StoreServer(TestNode.config(dir, 0, 1).tlsCert(node.certificate()).tlsKey(node.certificate())));
        assertTrue(keyIsACertificate.getMessage().contains("openssl pkcs8"), keyIsACertificate.getMessage());
        final TestCertificates.Issued other = pki.issue("other");
        final IllegalArgumentException notItsKey = assertThrows(IllegalArgumentException.class,
            () -> new StoreServer(TestNode.config(dir, 0, 1).tlsCert(node.certificate()).tlsKey(other.key())));
        assertTrue(notItsKey.getMessage().contains("is not the key of the certificate"), notItsKey.getMessage());
        final IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
            () -> new StoreServer(TestNode.config(dir, 0, 1).tlsCert(dir.resolve("nope.pem")).tlsKey(node.key())));
        assertTrue(missing.getMessage().contains("does not exist"), missing.getMessage());
    }

    @Test
    void replacedCertificateFilesAreServedToNewConnectionsOnTheDataAndAdminPortsWithoutARestart() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "limiter-test");
        final TestCertificates.Issued a = pki.issue("node-a", TestCertificates.KeyForm.SEC1);
        final TestCertificates.Issued b = pki.issue("node-b", TestCertificates.KeyForm.PKCS1);
        final Path cert = dir.resolve("tls.crt");
        final Path key = dir.resolve("tls.key");
        install(a, cert, key);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).tlsCert(cert).tlsKey(key).tlsReloadMillis(0),
            new ManualClock(SECOND)).start())
        {
            assertEquals("CN=node-a", dataPortCertificate(pki, server).getSubjectX500Principal().getName(), "a SEC1 key serves");
            assertEquals("CN=node-a", adminPortCertificate(pki, server).getSubjectX500Principal().getName());
            assertEquals(ReloadingTls.Outcome.UNCHANGED, server.reloadTls());

            install(b, cert, key);
            assertEquals(ReloadingTls.Outcome.RELOADED, server.reloadTls());
            final X509Certificate served = dataPortCertificate(pki, server);
            assertEquals("CN=node-b", served.getSubjectX500Principal().getName(), "a new data connection sees B (a PKCS#1 key)");
            assertEquals("CN=node-b", adminPortCertificate(pki, server).getSubjectX500Principal().getName(), "and a new admin one");
            assertTrue(server.metrics().scrape().contains("limiter_tls_reloads_total{result=\"reloaded\"} 1.0"), server.metrics().scrape());
            assertTrue(server.metrics().scrape().contains("limiter_tls_certificate_expiry_timestamp_seconds " +
                (double)served.getNotAfter().toInstant().getEpochSecond()), "the expiry is B's: " + server.metrics().scrape());

            Files.writeString(cert, "-----BEGIN CERTIFICATE-----\ncut short by a failed copy\n");
            assertEquals(ReloadingTls.Outcome.FAILED, server.reloadTls());
            assertEquals("CN=node-b", dataPortCertificate(pki, server).getSubjectX500Principal().getName(), "still B: TLS is never dropped");
            assertTrue(server.metrics().scrape().contains("limiter_tls_reloads_total{result=\"failed\"} 1.0"), server.metrics().scrape());
            assertTrue(server.metrics().scrape().contains("limiter_tls_files_refused 1.0"), server.metrics().scrape());
            install(a, cert, key);
            assertEquals(ReloadingTls.Outcome.RELOADED, server.reloadTls(), "good files again");
            assertTrue(server.metrics().scrape().contains("limiter_tls_files_refused 0.0"), server.metrics().scrape());
        }
    }

    @Test
    void aClientWhoseCaWasTakenOutOfTheBundleIsRefusedEvenWhenItTriesToResumeItsSession() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "limiter-test");
        final TestCertificates.Issued node = pki.issue("node");
        final TestCertificates retired = new TestCertificates(dir.resolve("retired"), "retired-clients");
        final TestCertificates current = new TestCertificates(dir.resolve("current"), "current-clients");
        final TestCertificates.Issued oldClient = retired.issue("old-client", TestCertificates.KeyForm.PKCS1);
        final TestCertificates.Issued newClient = current.issue("new-client", TestCertificates.KeyForm.SEC1);
        final Path bundle = dir.resolve("client-ca.pem");
        Files.copy(retired.ca(), bundle);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).tlsCert(node.certificate()).tlsKey(node.key())
            .tlsCa(bundle).tlsClientAuth(TlsClientAuth.REQUIRE).tlsReloadMillis(0), new ManualClock(SECOND)).start())
        {
            // One client context throughout: its session cache offers the session of its first connection again.
            final SSLContext old = Pem.context(oldClient.certificate(), oldClient.key(), pki.ca());
            assertEquals(MessageType.PONG, ping(old, server.port()));
            assertEquals(MessageType.PONG, ping(old, server.port()));

            Files.writeString(bundle, Files.readString(current.ca()));
            assertEquals(ReloadingTls.Outcome.RELOADED, server.reloadTls());
            assertThrows(IOException.class, () -> ping(old, server.port()), "the retired CA's client is refused");
            assertEquals(MessageType.PONG, ping(Pem.context(newClient.certificate(), newClient.key(), pki.ca()), server.port()),
                "the new CA's client is served");
        }
    }

    private static void install(final TestCertificates.Issued issued, final Path cert, final Path key) throws IOException
    {
        Files.copy(issued.key(), key, StandardCopyOption.REPLACE_EXISTING);
        Files.copy(issued.certificate(), cert, StandardCopyOption.REPLACE_EXISTING);
    }

    /** The certificate a new client (no session to resume) is shown on the data port, after a PING answered. */
    private static X509Certificate dataPortCertificate(final TestCertificates pki, final StoreServer server) throws IOException
    {
        try (SSLSocket socket = (SSLSocket)Pem.context(null, null, pki.ca()).getSocketFactory().createSocket("127.0.0.1", server.port()))
        {
            socket.setSoTimeout(5000);
            socket.getOutputStream().write(RawConnection.frame(MessageType.PING, 5, new byte[0]));
            socket.getOutputStream().flush();
            final DataInputStream in = new DataInputStream(socket.getInputStream());
            final byte[] rest = new byte[in.readInt()];
            in.readFully(rest);
            assertEquals(MessageType.PONG, rest[1] & 0xFF);
            return (X509Certificate)socket.getSession().getPeerCertificates()[0];
        }
    }

    private static X509Certificate adminPortCertificate(final TestCertificates pki, final StoreServer server) throws Exception
    {
        final HttpResponse<String> health = HttpClient.newBuilder().sslContext(Pem.context(null, null, pki.ca())).build()
            .send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + server.adminPort() + "/health")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, health.statusCode());
        return (X509Certificate)health.sslSession().orElseThrow().getPeerCertificates()[0];
    }

    private static int ping(final SSLContext context, final int port) throws IOException
    {
        try (SSLSocket socket = (SSLSocket)context.getSocketFactory().createSocket("127.0.0.1", port))
        {
            socket.setSoTimeout(5000);
            final javax.net.ssl.SSLParameters parameters = socket.getSSLParameters();
            parameters.setEndpointIdentificationAlgorithm("HTTPS"); // the node's certificate must name 127.0.0.1
            socket.setSSLParameters(parameters);
            socket.getOutputStream().write(RawConnection.frame(MessageType.PING, 5, new byte[0]));
            socket.getOutputStream().flush();
            final DataInputStream in = new DataInputStream(socket.getInputStream());
            final int length = in.readInt();
            final byte[] rest = new byte[length];
            in.readFully(rest);
            return rest[1] & 0xFF;
        }
    }

    private static boolean plainPingGetsNoAnswer(final int port) throws IOException
    {
        try (Socket socket = new Socket("127.0.0.1", port))
        {
            socket.setSoTimeout(3000);
            socket.getOutputStream().write(RawConnection.frame(MessageType.PING, 5, new byte[0]));
            final byte[] answer = socket.getInputStream().readNBytes(16);
            return answer.length < 16 || answer[5] != MessageType.PONG;
        }
        catch (final IOException closed)
        {
            return true;
        }
    }

    private static void awaitCounted(final StoreServer server, final String port, final String reason) throws InterruptedException
    {
        final String counter = "limiter_refusals_total{port=\"" + port + "\",reason=\"" + reason + "\"}";
        Await.until("a " + reason + " refusal counted on the " + port + " port", Duration.ofSeconds(5),
            () -> server.metrics().scrape().contains(counter));
    }
}
