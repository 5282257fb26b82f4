package dev.limiter.server;

import dev.limiter.protocol.Pem;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClosingTogether;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.TestCertificates;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLSocket;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Raft port: a cap on connections, a deadline for a connection's first bytes, and mutual TLS between members. */
@Timeout(120)
class RaftPortTest
{
    private static final String TOKEN = "raft-port-test-token-0123456789";

    @TempDir
    Path dir;

    private final List<StoreServer> nodes = new ArrayList<>();

    @AfterEach
    void stop()
    {
        ClosingTogether.close(nodes);
    }

    private StoreServer awaitLeader()
    {
        final AtomicReference<StoreServer> leader = new AtomicReference<>();
        Await.until("a leader", Duration.ofSeconds(30), () ->
        {
            leader.set(nodes.stream().filter(node -> node.replication().canDecide()).findFirst().orElse(null));
            return leader.get() != null;
        });
        return leader.get();
    }

    @Test
    void theRaftPortCapsConnectionsAndClosesOnesThatSayNothing() throws Exception
    {
        final int port = ClusterPorts.free(1, 100)[0];
        Files.createDirectories(dir.resolve("config"));
        nodes.add(new StoreServer(TestNode.config(dir.resolve("config"), port, 1).frameTimeoutMillis(500)
            .nodeId("n1").peers(Map.of("n1", new InetSocketAddress("127.0.0.1", port))).raftPortOffset(100).dataDir(dir.resolve("n1"))).start());
        final StoreServer node = awaitLeader();
        final List<Socket> sockets = new ArrayList<>();
        try
        {
            for (int i = 0; i < RaftNodeConfig.DEFAULT_MAX_CONNECTIONS + 10; i++)
            {
                final Socket socket = new Socket("127.0.0.1", port + 100);
                socket.setSoTimeout(3000);
                sockets.add(socket);
            }
            // The ones over the cap are closed at once; the rest after the preface deadline (nothing was sent).
            int closed = 0;
            for (final Socket socket : sockets)
            {
                closed += closedByPeer(socket) ? 1 : 0;
            }
            assertEquals(sockets.size(), closed, "every silent connection was closed");
            final String metrics = node.metrics().scrape();
            assertTrue(metrics.contains("limiter_refusals_total{port=\"raft\",reason=\"max-connections\"}"), metrics);
            assertTrue(metrics.contains("limiter_refusals_total{port=\"raft\",reason=\"unfinished-message\"}"), metrics);
        }
        finally
        {
            for (final Socket socket : sockets)
            {
                socket.close();
            }
        }
        assertTrue(node.replication().canDecide(), "the node still leads");
    }

    @Test
    void withTlsMembersReplicateOverMutualTlsAndStrangersCannotConnect() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "cluster");
        final TestCertificates stranger = new TestCertificates(dir.resolve("other"), "elsewhere");
        final TestCertificates.Issued impostor = stranger.issue("impostor");
        final int[] ports = ClusterPorts.free(3, 100);
        final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
        for (int i = 0; i < 3; i++)
        {
            peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", ports[i]));
        }
        for (int i = 0; i < 3; i++)
        {
            final String id = "n" + (i + 1);
            final TestCertificates.Issued cert = pki.issue(id, TestCertificates.KeyForm.values()[i]); // PKCS#8, PKCS#1, SEC1
            Files.createDirectories(dir.resolve(id + "-config"));
            nodes.add(new StoreServer(TestNode.config(dir.resolve(id + "-config"), ports[i], 1).adminToken(TOKEN)
                .tlsCert(cert.certificate()).tlsKey(cert.key()).tlsCa(pki.ca())
                .nodeId(id).peers(peers).raftPortOffset(100).dataDir(dir.resolve(id))).start());
        }
        final StoreServer leader = awaitLeader();

        // A change commits through the log, so it reached a majority over mutual TLS, and every member applies it.
        final HttpClient https = HttpClient.newBuilder().sslContext(Pem.context(null, null, pki.ca())).build();
        final String orders = "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":9,\"period\":\"1s\",\"burst\":9," +
            "\"owner\":\"test\",\"reason\":\"over TLS\"}";
        final HttpResponse<String> put = https.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + leader.adminPort() + "/v1/policies/orders"))
            .PUT(HttpRequest.BodyPublishers.ofString(orders)).header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, put.statusCode(), put.body());
        Await.until("every member to apply the policy", Duration.ofSeconds(20),
            () -> nodes.stream().allMatch(n -> n.policyState().current("orders").getRate() == 9));
        assertTrue(nodes.stream().allMatch(n -> n.policyState().current("orders").getRate() == 9), "every member applied it");

        // The Raft port takes only members: no certificate, or one from another CA, is refused.
        final int raftPort = ports[0] + 100;
        assertThrows(IOException.class, () -> handshake(Pem.context(null, null, pki.ca()), raftPort), "no client certificate");
        assertThrows(IOException.class, () -> handshake(Pem.context(impostor.certificate(), impostor.key(), pki.ca()), raftPort),
            "a certificate from another CA");
    }

    @Test
    void theRaftPortServesReplacedCertificateFilesToNewConnectionsWhileTheMemberKeepsLeading() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "cluster");
        final TestCertificates.Issued a = pki.issue("n1-a", TestCertificates.KeyForm.PKCS1);
        final TestCertificates.Issued b = pki.issue("n1-b", TestCertificates.KeyForm.SEC1);
        final TestCertificates.Issued peer = pki.issue("peer");
        final Path cert = dir.resolve("tls.crt");
        final Path key = dir.resolve("tls.key");
        Files.copy(a.key(), key);
        Files.copy(a.certificate(), cert);
        final int port = ClusterPorts.free(1, 100)[0];
        Files.createDirectories(dir.resolve("config"));
        nodes.add(new StoreServer(TestNode.config(dir.resolve("config"), port, 1).tlsCert(cert).tlsKey(key).tlsCa(pki.ca()).tlsReloadMillis(0)
            .nodeId("n1").peers(Map.of("n1", new InetSocketAddress("127.0.0.1", port))).raftPortOffset(100).dataDir(dir.resolve("n1"))).start());
        final StoreServer node = awaitLeader();
        assertEquals("CN=n1-a", raftCertificate(pki, peer, port + 100));

        Files.copy(b.key(), key, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Files.copy(b.certificate(), cert, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        assertEquals(dev.limiter.protocol.ReloadingTls.Outcome.RELOADED, node.reloadTls());
        assertEquals("CN=n1-b", raftCertificate(pki, peer, port + 100), "a new connection to the Raft port sees B");
        assertTrue(node.replication().canDecide(), "the member still leads");
    }

    /** The certificate a new member connection (a peer's certificate, no session to resume) is shown on the Raft port. */
    private static String raftCertificate(final TestCertificates pki, final TestCertificates.Issued peer, final int port) throws IOException
    {
        try (SSLSocket socket = (SSLSocket)Pem.context(peer.certificate(), peer.key(), pki.ca()).getSocketFactory().createSocket("127.0.0.1", port))
        {
            socket.setSoTimeout(5000);
            socket.setEnabledProtocols(new String[] {"TLSv1.3"});
            final javax.net.ssl.SSLParameters parameters = socket.getSSLParameters();
            parameters.setApplicationProtocols(new String[] {"h2"});
            socket.setSSLParameters(parameters);
            socket.startHandshake();
            return ((java.security.cert.X509Certificate)socket.getSession().getPeerCertificates()[0]).getSubjectX500Principal().getName();
        }
    }

    private static void handshake(final javax.net.ssl.SSLContext context, final int port) throws IOException
    {
        try (SSLSocket socket = (SSLSocket)context.getSocketFactory().createSocket("127.0.0.1", port))
        {
            socket.setSoTimeout(5000);
            socket.setEnabledProtocols(new String[] {"TLSv1.3"});
            final javax.net.ssl.SSLParameters parameters = socket.getSSLParameters();
            parameters.setApplicationProtocols(new String[] {"h2"});
            socket.setSSLParameters(parameters);
            socket.startHandshake();
            // Under TLS 1.3 a refused client certificate shows on the first read.
            socket.getOutputStream().write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            if (socket.getInputStream().read() < 0)
            {
                throw new IOException("closed by the node");
            }
        }
    }

    /** Whether the node closes the connection (what it sends first, its HTTP/2 settings, is read past). */
    private static boolean closedByPeer(final Socket socket)
    {
        try
        {
            while (true)
            {
                if (socket.getInputStream().read() == -1)
                {
                    return true;
                }
            }
        }
        catch (final IOException e)
        {
            return !(e instanceof java.net.SocketTimeoutException);
        }
    }
}
