package dev.limiter.envoy.api;

import dev.limiter.client.LimiterClient;
import dev.limiter.envoy.RlsServer;
import dev.limiter.protocol.ReloadingTls;
import dev.limiter.protocol.api.v1.AcquireRequest;
import dev.limiter.protocol.api.v1.AcquireResponse;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import dev.limiter.server.testing.TestCertificates;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContextBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decision API's ports under TLS, as {@code ./limiter api --tls-cert --tls-key [--tls-ca --tls-client-auth
 * require]}
 * serves them, against a real node: both ports speak TLS only, and under mutual TLS without tokens a client
 * certificate from the CA is the credential, so a caller without one, or with one from another CA, gets no
 * decision on either port.
 */
@Timeout(60)
class ApiTlsTest
{
    private static final String BODY = "{\"tenant\":\"acme\",\"route\":\"/v1/orders/1\"}";

    @TempDir
    Path dir;

    private StoreServer node;
    private ApiServer api;
    private final List<ManagedChannel> channels = new ArrayList<>();

    @AfterEach
    void stop()
    {
        channels.forEach(ManagedChannel::shutdownNow);
        if (api != null)
        {
            api.close();
        }
        if (node != null)
        {
            node.close();
        }
    }

    private void start(final ReloadingTls tls, final ClientAuth clientAuth, final BearerTokens tokens) throws Exception
    {
        final Path policies = Files.writeString(dir.resolve("policies.json"), ApiCluster.POLICIES);
        node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(policies)).start();
        api = ApiServer.start(LimiterClient.builder().endpoints("127.0.0.1:" + node.port())
            .deadline(Duration.ofSeconds(1)), 1,
            new ApiServer.Settings(new InetSocketAddress("127.0.0.1", 0), new InetSocketAddress("127.0.0.1", 0),
                Duration.ofSeconds(1), tokens, new RlsServer.Port(100, tls, clientAuth, null, Duration.ZERO)));
    }

    /** A gRPC channel over TLS trusting {@code pki}'s CA, presenting {@code certificate} when not null. */
    private ManagedChannel grpc(final TestCertificates pki,
        final TestCertificates.Issued certificate) throws SSLException
    {
        final SslContextBuilder context = GrpcSslContexts.forClient().trustManager(pki.ca().toFile());
        if (certificate != null)
        {
            context.keyManager(ReloadingTls.load(certificate.certificate(), certificate.key(), null).keyManager());
        }
        final ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", api.grpcPort())
            .sslContext(context.build()).build();
        channels.add(channel);
        return channel;
    }

    private static AcquireResponse acquire(final ManagedChannel channel)
    {
        return ClientCalls.blockingUnaryCall(channel, RateLimiterMethods.ACQUIRE,
            CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS),
            AcquireRequest.newBuilder().setTenant("acme").setRoute("/v1/orders/1").build());
    }

    private HttpResponse<String> post(final String scheme, final SSLContext tls, final String token)
        throws IOException, InterruptedException
    {
        final HttpClient.Builder client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5));
        if (tls != null)
        {
            client.sslContext(tls);
        }
        final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(scheme + "://127.0.0.1:" + api.httpPort()
            + "/v1/acquire")).timeout(Duration.ofSeconds(5)).header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(BODY));
        if (token != null)
        {
            request.header("Authorization", "Bearer " + token);
        }
        return client.build().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** What a client that trusts {@code pki} and presents {@code certificate} (or nothing) uses for HTTPS. */
    private static SSLContext https(final TestCertificates pki, final TestCertificates.Issued certificate)
    {
        return certificate == null ? ReloadingTls.load(null, null, pki.ca()).context()
            : ReloadingTls.load(certificate.certificate(), certificate.key(), pki.ca()).context();
    }

    @Test
    void underMutualTlsWithoutTokensOnlyACertificateFromTheCaGetsADecisionOnEitherPort() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "api");
        final TestCertificates.Issued server = pki.issue("api-server");
        final TestCertificates.Issued caller = pki.issue("caller", TestCertificates.KeyForm.PKCS1);
        final TestCertificates.Issued impostor = new TestCertificates(dir.resolve("other"),
            "elsewhere").issue("impostor");
        start(ReloadingTls.load(server.certificate(), server.key(), pki.ca()), ClientAuth.REQUIRE, null);

        final AcquireResponse decided = acquire(grpc(pki, caller));
        assertTrue(decided.getDecision().getAllowed(), decided.toString());
        assertFalse(decided.getDecision().getDecidedLocally(), "the node decided: " + decided);
        assertThrows(StatusRuntimeException.class, () -> acquire(grpc(pki, null)), "gRPC without a certificate");
        assertThrows(StatusRuntimeException.class, () -> acquire(grpc(pki, impostor)), "gRPC with another CA's");

        final HttpResponse<String> answered = post("https", https(pki, caller), null);
        assertEquals(200, answered.statusCode(), answered.body());
        assertTrue(answered.body().contains("\"allowed\":true"), answered.body());
        assertThrows(IOException.class, () -> post("https", https(pki, null), null), "HTTPS without a certificate");
        assertThrows(IOException.class, () -> post("https", https(pki, impostor), null), "HTTPS with another CA's");
        assertThrows(IOException.class, () -> post("http", null, null), "plain HTTP to the TLS port");
    }

    @Test
    void overTlsWithTokensTheTokenIsStillRequiredAndPlaintextIsNotServed() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "api");
        final TestCertificates.Issued server = pki.issue("api-server", TestCertificates.KeyForm.SEC1);
        start(ReloadingTls.load(server.certificate(), server.key(), null), ClientAuth.NONE,
            BearerTokens.of(ApiCluster.TOKEN));

        final HttpResponse<String> answered = post("https", https(pki, null), ApiCluster.TOKEN);
        assertEquals(200, answered.statusCode(), answered.body());
        assertEquals(401, post("https", https(pki, null), null).statusCode(), "TLS is not a credential by itself");
        assertEquals(401, post("https", https(pki, null), "not-the-token-0123456789").statusCode());
        assertThrows(IOException.class, () -> post("http", null, ApiCluster.TOKEN), "plain HTTP to the TLS port");

        final ManagedChannel plaintext = NettyChannelBuilder.forAddress("127.0.0.1",
            api.grpcPort()).usePlaintext().build();
        channels.add(plaintext);
        assertThrows(StatusRuntimeException.class, () -> acquire(plaintext), "plaintext gRPC to the TLS port");
    }
}
