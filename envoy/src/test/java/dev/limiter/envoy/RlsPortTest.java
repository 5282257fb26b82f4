package dev.limiter.envoy;

import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.BuildInfo;
import dev.limiter.protocol.Pem;
import dev.limiter.protocol.ProtocolGeneration;
import dev.limiter.protocol.ReloadingTls;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import dev.limiter.server.testing.TestCertificates;
import dev.limiter.server.net.TlsClientAuth;
import dev.limiter.server.testing.Await;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContextBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

import static dev.limiter.envoy.RateLimitServiceTest.descriptor;
import static dev.limiter.envoy.RateLimitServiceTest.request;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The gateway's port: a connection cap, TLS (server-only and mutual, files followed on disk) and the gRPC health service. */
@Timeout(90)
class RlsPortTest
{
    @TempDir
    Path dir;

    private StoreServer node;
    private final List<AutoCloseable> running = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();

    @BeforeEach
    void startNode() throws Exception
    {
        node = startNode(0, null);
    }

    private StoreServer startNode(final int port, final TestCertificates pki) throws Exception
    {
        final Path policies = dir.resolve("policies.json");
        Files.writeString(policies, RateLimitServiceTest.POLICIES);
        final ServerConfig config = new ServerConfig().host("127.0.0.1").port(port).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(policies).dataDir(dir.resolve("node-" + port));
        if (pki != null)
        {
            final TestCertificates.Issued certificate = pki.issue("node");
            config.tlsCert(certificate.certificate()).tlsKey(certificate.key()).tlsCa(pki.ca()).tlsClientAuth(TlsClientAuth.REQUIRE);
        }
        return new StoreServer(config).start();
    }

    @AfterEach
    void stop() throws Exception
    {
        for (final ManagedChannel channel : channels)
        {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        for (int i = running.size() - 1; i >= 0; i--)
        {
            running.get(i).close();
        }
        if (node != null)
        {
            node.close();
        }
    }

    private RlsServer gateway(final RlsServer.Port port)
    {
        return gateway(port, "127.0.0.1:" + node.port());
    }

    private RlsServer gateway(final RlsServer.Port port, final String servers)
    {
        final RlsServer rls = RlsServer.start(LimiterClient.builder().endpoints(servers).deadline(Duration.ofMillis(500)), 1,
            new InetSocketAddress("127.0.0.1", 0), Duration.ofMillis(500), false, port);
        running.add(rls);
        return rls;
    }

    private ManagedChannel plaintext(final RlsServer rls)
    {
        final ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", rls.port()).usePlaintext().build();
        channels.add(channel);
        return channel;
    }

    /** A TLS channel trusting {@code pki}'s CA, presenting {@code certificate} when not null. */
    private ManagedChannel tls(final RlsServer rls, final TestCertificates pki, final TestCertificates.Issued certificate) throws SSLException
    {
        final SslContextBuilder context = GrpcSslContexts.forClient().trustManager(pki.ca().toFile());
        if (certificate != null)
        {
            context.keyManager(ReloadingTls.load(certificate.certificate(), certificate.key(), null).keyManager());
        }
        final ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", rls.port()).sslContext(context.build()).build();
        channels.add(channel);
        return channel;
    }

    private static RateLimitResponse.Code decide(final ManagedChannel channel)
    {
        final RateLimitResponse response = RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
            .shouldRateLimit(request("edge", descriptor("path", "/tls")));
        return response.getOverallCode();
    }

    private static ServingStatus health(final ManagedChannel channel, final String service)
    {
        return HealthGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
            .check(HealthCheckRequest.newBuilder().setService(service).build()).getStatus();
    }

    @Test
    void connectionsBeyondTheCapAreClosedAtOnceAndCounted() throws Exception
    {
        final RlsServer rls = gateway(new RlsServer.Port(3, null, ClientAuth.NONE, null, Duration.ZERO));
        final GatewayMetrics metrics = GatewayMetrics.serve(new InetSocketAddress("127.0.0.1", 0), rls);
        running.add(metrics);
        final List<ManagedChannel> served = new ArrayList<>();
        for (int i = 0; i < 3; i++)
        {
            served.add(plaintext(rls));
            assertEquals(RateLimitResponse.Code.OK, decide(served.get(i)), "connection " + (i + 1) + " of 3 is served");
        }
        try (Socket fourth = new Socket("127.0.0.1", rls.port()))
        {
            fourth.setSoTimeout(5000);
            assertEquals(-1, fourth.getInputStream().read(), "the fourth is closed before gRPC says anything");
        }
        assertThrows(StatusRuntimeException.class, () -> decide(plaintext(rls)), "a fourth gRPC client is not served either");
        assertEquals(2, rls.refusedOverCap());
        assertTrue(scrape(metrics).contains("limiter_refusals_total{port=\"rls\",reason=\"max-connections\"} 2.0"), scrape(metrics));
        assertTrue(scrape(metrics).contains("limiter_build_info{commit=\"" + BuildInfo.current().commit() +
            "\",protocol_generation=\"" + ProtocolGeneration.CURRENT + "\",version=\"" + BuildInfo.current().version() +
            "\"} 1"), "the gateway names its build");

        served.get(0).shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        Await.until("the closed connection's slot freed", Duration.ofSeconds(10), () -> rls.openConnections() <= 2);
        assertEquals(RateLimitResponse.Code.OK, decide(plaintext(rls)), "a slot freed is taken again");
    }

    @Test
    void overTlsEnvoyIsServedAndAPlaintextClientIsNot() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "edge");
        final TestCertificates.Issued certificate = pki.issue("gateway", TestCertificates.KeyForm.PKCS1);
        final RlsServer rls = gateway(new RlsServer.Port(100, ReloadingTls.load(certificate.certificate(), certificate.key(), null),
            ClientAuth.NONE, null, Duration.ZERO));
        assertEquals(RateLimitResponse.Code.OK, decide(tls(rls, pki, null)), "served over TLS, with a PKCS#1 key");
        assertThrows(StatusRuntimeException.class, () -> decide(plaintext(rls)), "plaintext gets nothing");
        awaitAtLeast(rls::failedHandshakes, 1, "the plaintext client's failed handshake is counted");
    }

    @Test
    void underMutualTlsOnlyClientsWithACertificateFromTheCaAreServed() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "edge");
        final TestCertificates.Issued certificate = pki.issue("gateway", TestCertificates.KeyForm.SEC1);
        final TestCertificates.Issued envoy = pki.issue("envoy", TestCertificates.KeyForm.PKCS1);
        final TestCertificates.Issued impostor = new TestCertificates(dir.resolve("other"), "elsewhere").issue("impostor");
        final RlsServer rls = gateway(new RlsServer.Port(100, ReloadingTls.load(certificate.certificate(), certificate.key(), pki.ca()),
            ClientAuth.REQUIRE, null, Duration.ZERO));
        assertEquals(RateLimitResponse.Code.OK, decide(tls(rls, pki, envoy)), "Envoy with a certificate from the CA");
        assertThrows(StatusRuntimeException.class, () -> decide(tls(rls, pki, null)), "no client certificate");
        assertThrows(StatusRuntimeException.class, () -> decide(tls(rls, pki, impostor)), "a certificate from another CA");
        awaitAtLeast(rls::failedHandshakes, 2, "both refused handshakes are counted");
    }

    @Test
    void replacedCertificateFilesAreServedToNewConnectionsAndACorruptReplacementIsNot() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "edge");
        final TestCertificates.Issued a = pki.issue("gateway-a", TestCertificates.KeyForm.PKCS1);
        final TestCertificates.Issued b = pki.issue("gateway-b", TestCertificates.KeyForm.SEC1);
        final Path cert = dir.resolve("tls.crt");
        final Path key = dir.resolve("tls.key");
        install(a, cert, key);
        final RlsServer rls = gateway(new RlsServer.Port(100, ReloadingTls.load(cert, key, null), ClientAuth.NONE, null, Duration.ZERO));
        final GatewayMetrics metrics = GatewayMetrics.serve(new InetSocketAddress("127.0.0.1", 0), rls);
        running.add(metrics);
        final ManagedChannel before = tls(rls, pki, null);
        assertEquals(RateLimitResponse.Code.OK, decide(before));
        assertEquals("CN=gateway-a", presented(pki, rls.port()));

        install(b, cert, key);
        assertEquals(ReloadingTls.Outcome.RELOADED, rls.reloadTls());
        assertEquals("CN=gateway-b", presented(pki, rls.port()), "a new connection sees B");
        assertEquals(RateLimitResponse.Code.OK, decide(before), "the connection opened before keeps going");
        assertTrue(scrape(metrics).contains("limiter_tls_certificate_expiry_timestamp_seconds " +
            (double)Pem.certificates(b.certificate()).get(0).getNotAfter().toInstant().getEpochSecond()), scrape(metrics));

        Files.writeString(key, "-----BEGIN EC PRIVATE KEY-----\ntruncated\n");
        assertEquals(ReloadingTls.Outcome.FAILED, rls.reloadTls());
        assertEquals("CN=gateway-b", presented(pki, rls.port()), "still B: TLS is never dropped");
        assertEquals(RateLimitResponse.Code.OK, decide(tls(rls, pki, null)));
        final String scraped = scrape(metrics);
        assertTrue(scraped.contains("limiter_tls_reloads_total{result=\"reloaded\"} 1.0") &&
            scraped.contains("limiter_tls_reloads_total{result=\"failed\"} 1.0") && scraped.contains("limiter_tls_files_refused 1.0"), scraped);
    }

    @Test
    void aClientWhoseCaWasTakenOutOfTheBundleIsRefusedEvenWhenItTriesToResumeItsSession() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "edge");
        final TestCertificates.Issued certificate = pki.issue("gateway");
        final TestCertificates retired = new TestCertificates(dir.resolve("retired"), "retired-envoys");
        final TestCertificates current = new TestCertificates(dir.resolve("current"), "current-envoys");
        final Path bundle = dir.resolve("client-ca.pem");
        Files.copy(retired.ca(), bundle);
        final RlsServer rls = gateway(new RlsServer.Port(100, ReloadingTls.load(certificate.certificate(), certificate.key(), bundle),
            ClientAuth.REQUIRE, null, Duration.ZERO));
        final TestCertificates.Issued oldEnvoy = retired.issue("old-envoy");
        // One client context throughout: its session cache offers the session of its first connection again.
        final javax.net.ssl.SSLContext old = Pem.context(oldEnvoy.certificate(), oldEnvoy.key(), pki.ca());
        assertTrue(http2Settings(old, rls.port()), "served");
        assertTrue(http2Settings(old, rls.port()), "served again (resumed)");

        Files.writeString(bundle, Files.readString(current.ca()));
        assertEquals(ReloadingTls.Outcome.RELOADED, rls.reloadTls());
        assertFalse(http2Settings(old, rls.port()), "the retired CA's Envoy is refused");
        final TestCertificates.Issued newEnvoy = current.issue("new-envoy");
        assertTrue(http2Settings(Pem.context(newEnvoy.certificate(), newEnvoy.key(), pki.ca()), rls.port()), "the new CA's Envoy is served");
    }

    /** Whether a TLS connection made with {@code context} gets gRPC's HTTP/2 settings (false: refused or closed). */
    private static boolean http2Settings(final javax.net.ssl.SSLContext context, final int port)
    {
        try (SSLSocket socket = (SSLSocket)context.getSocketFactory().createSocket("127.0.0.1", port))
        {
            socket.setSoTimeout(5000);
            final SSLParameters parameters = socket.getSSLParameters();
            parameters.setApplicationProtocols(new String[] {"h2"});
            socket.setSSLParameters(parameters);
            socket.startHandshake();
            socket.getOutputStream().write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            return socket.getInputStream().read() >= 0;
        }
        catch (final IOException refused)
        {
            return false;
        }
    }

    @Test
    void theHealthServiceIsServingOnceAPolicySetIsHeldAndNotServingFromShutdown() throws Exception
    {
        final int storePort = ClusterPorts.free(1, 1)[0];
        final RlsServer rls = gateway(RlsServer.Port.PLAINTEXT, "127.0.0.1:" + storePort);
        final ManagedChannel channel = plaintext(rls);
        assertEquals(ServingStatus.NOT_SERVING, health(channel, ""), "no node reachable: no policy set held");
        assertEquals(ServingStatus.NOT_SERVING, health(channel, RlsServer.SERVICE));
        final Iterator<HealthCheckResponse> watch = HealthGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS)
            .watch(HealthCheckRequest.newBuilder().setService(RlsServer.SERVICE).build());
        assertEquals(ServingStatus.NOT_SERVING, watch.next().getStatus());

        final StoreServer late = startNode(storePort, null);
        running.add(late);
        assertEquals(ServingStatus.SERVING, watch.next().getStatus(), "the node came up and the gateway's SDK fetched its policies");
        assertEquals(ServingStatus.SERVING, health(channel, ""));

        final Thread closing = new Thread(rls::close, "closing-gateway");
        closing.start();
        assertEquals(ServingStatus.NOT_SERVING, watch.next().getStatus(), "shutting down: Envoy and Kubernetes stop sending calls");
        closing.join(TimeUnit.SECONDS.toMillis(20));
        assertFalse(closing.isAlive());
        running.remove(rls);
    }

    @Test
    void theTlsOptionsAreCheckedWithTheNodesRulesAndMessages() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "edge");
        final TestCertificates.Issued certificate = pki.issue("gateway");
        final String cert = certificate.certificate().toString();
        final String key = certificate.key().toString();
        final String missing = dir.resolve("missing.pem").toString();

        assertRefusedAsTheNodeRefuses(new ServerConfig().tlsCert(certificate.certificate()), "--tls-cert", cert);
        assertRefusedAsTheNodeRefuses(new ServerConfig().tlsCert(certificate.certificate()).tlsKey(certificate.key())
            .tlsClientAuth(TlsClientAuth.REQUIRE), "--tls-cert", cert, "--tls-key", key, "--tls-client-auth", "require");
        assertRefusedAsTheNodeRefuses(new ServerConfig().tlsCert(Path.of(missing)).tlsKey(certificate.key()), "--tls-cert", missing, "--tls-key", key);
        assertRefusedAsTheNodeRefuses(new ServerConfig().tlsReloadMillis(50), "--tls-reload-ms", "50");
        final String caAlone = assertRefusedAsTheNodeRefuses(new ServerConfig().tlsCa(pki.ca()), "--tls-ca", pki.ca().toString());
        assertTrue(caAlone.contains("--store-tls-ca"), "the old meaning of --tls-ca is pointed to: " + caAlone);
        assertTrue(refused("--tls-client-auth", "maybe").contains("--tls-client-auth 'maybe' is not none, optional or require"));
        assertTrue(refused("--max-connections", "0").contains("--max-connections must be 1 to 1000000, was 0"));
        assertTrue(refused("--store-tls-cert", cert).contains("--store-tls-cert and --store-tls-key go together"));
        assertTrue(refused("--tls-cert", cert, "--tls-key", pki.issue("other").key().toString()).contains("is not the key of the certificate"));
    }

    @Test
    void theCommandServesEnvoyOverMutualTlsAndAsksANodeThatRequiresClientCertificates() throws Exception
    {
        node.close();
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "cluster");
        node = startNode(0, pki);
        final TestCertificates.Issued gateway = pki.issue("gateway", TestCertificates.KeyForm.PKCS1);
        final TestCertificates.Issued envoy = pki.issue("envoy", TestCertificates.KeyForm.SEC1);
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final CountDownLatch stop = new CountDownLatch(1);
        final AtomicInteger exit = new AtomicInteger(-1);
        final Thread command = new Thread(() -> exit.set(RlsMain.run(new String[] {
            "--servers", "127.0.0.1:" + node.port(), "--listen", "127.0.0.1:" + ClusterPorts.free(1, 1)[0], "--max-connections", "10",
            "--tls-cert", gateway.certificate().toString(), "--tls-key", gateway.key().toString(), "--tls-ca", pki.ca().toString(),
            "--tls-client-auth", "require",
            "--store-tls-ca", pki.ca().toString(), "--store-tls-cert", gateway.certificate().toString(), "--store-tls-key", gateway.key().toString()},
            new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8), stop)), "rls-command");
        command.start();
        try
        {
            final Matcher started = awaitOutput(out, err, Pattern.compile("Envoy rate limit service on 127\\.0\\.0\\.1:(\\d+) \\(mutual TLS\\)"));
            final int port = Integer.parseInt(started.group(1));
            final ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", port).sslContext(GrpcSslContexts.forClient()
                .trustManager(pki.ca().toFile()).keyManager(ReloadingTls.load(envoy.certificate(), envoy.key(), null).keyManager()).build()).build();
            channels.add(channel);
            final RateLimitResponse response = RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
                .shouldRateLimit(request("edge", descriptor("path", "/mtls")));
            assertEquals(RateLimitResponse.Code.OK, response.getOverallCode());
            assertFalse(response.hasDynamicMetadata(), "the node decided (over mutual TLS), not the gateway's fallback: " + response);
        }
        finally
        {
            stop.countDown();
            command.join(TimeUnit.SECONDS.toMillis(20));
        }
        assertEquals(0, exit.get(), err.toString(StandardCharsets.UTF_8));
    }

    /** Runs the command with {@code args}: exit status 2 and a message equal to the node's for the same settings. */
    private String assertRefusedAsTheNodeRefuses(final ServerConfig node, final String... args)
    {
        final IllegalArgumentException nodes = assertThrows(IllegalArgumentException.class, node::build);
        final String message = refused(args);
        assertTrue(message.startsWith("limiter rls: " + nodes.getMessage()), "the node says '" + nodes.getMessage() + "', the gateway " + message);
        return message;
    }

    private static String refused(final String... args)
    {
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = RlsMain.run(args, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true, StandardCharsets.UTF_8),
            new CountDownLatch(0));
        assertEquals(2, status, err.toString(StandardCharsets.UTF_8));
        return err.toString(StandardCharsets.UTF_8).strip();
    }

    private static Matcher awaitOutput(final ByteArrayOutputStream out, final ByteArrayOutputStream err, final Pattern pattern)
    {
        final Matcher[] found = new Matcher[1];
        Await.until("the gateway's start", Duration.ofSeconds(30),
            () -> (found[0] = pattern.matcher(out.toString(StandardCharsets.UTF_8))).find(),
            () -> out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8));
        return found[0];
    }

    private static void install(final TestCertificates.Issued issued, final Path cert, final Path key) throws IOException
    {
        Files.copy(issued.key(), key, StandardCopyOption.REPLACE_EXISTING);
        Files.copy(issued.certificate(), cert, StandardCopyOption.REPLACE_EXISTING);
    }

    /** The subject of the certificate a new TLS client (no session to resume) is shown on the port. */
    private static String presented(final TestCertificates pki, final int port) throws IOException
    {
        try (SSLSocket socket = (SSLSocket)Pem.context(null, null, pki.ca()).getSocketFactory().createSocket("127.0.0.1", port))
        {
            socket.setSoTimeout(5000);
            final SSLParameters parameters = socket.getSSLParameters();
            parameters.setApplicationProtocols(new String[] {"h2"});
            socket.setSSLParameters(parameters);
            socket.startHandshake();
            return ((java.security.cert.X509Certificate)socket.getSession().getPeerCertificates()[0]).getSubjectX500Principal().getName();
        }
    }

    private static String scrape(final GatewayMetrics metrics) throws Exception
    {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metrics.port() + "/metrics")).build(),
            HttpResponse.BodyHandlers.ofString()).body();
    }

    private static void awaitAtLeast(final java.util.function.LongSupplier count, final long least, final String what)
    {
        Await.until(what, Duration.ofSeconds(10), () -> count.getAsLong() >= least,
            () -> Long.toString(count.getAsLong()));
    }
}
