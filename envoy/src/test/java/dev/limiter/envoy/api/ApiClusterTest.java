package dev.limiter.envoy.api;

import com.google.protobuf.UnknownFieldSet;
import dev.limiter.protocol.api.v1.AcquireBatchRequest;
import dev.limiter.protocol.api.v1.AcquireBatchResponse;
import dev.limiter.protocol.api.v1.AcquireRequest;
import dev.limiter.protocol.api.v1.AcquireResponse;
import dev.limiter.protocol.api.v1.ItemResult;
import dev.limiter.protocol.api.v1.ReleaseRequest;
import dev.limiter.server.testing.Await;
import io.grpc.CallOptions;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * limiter.v1.RateLimiter served by a gateway in front of three real nodes, called as other
 * languages call it: a grpc-java client (with no generated stub: the proto's messages and method
 * names only) and plain HTTP/JSON. Every refused request is followed by a look at the bucket it
 * named: what is left shows that nothing was charged for it.
 */
@Timeout(120)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ApiClusterTest
{
    private ApiCluster cluster;
    private ManagedChannel channel;
    private io.grpc.Channel authed;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start(@TempDir final Path dir) throws Exception
    {
        cluster = new ApiCluster(dir);
        channel = NettyChannelBuilder.forAddress("127.0.0.1", cluster.api().grpcPort()).usePlaintext().build();
        authed = ClientInterceptors.intercept(channel,
            MetadataUtils.newAttachHeadersInterceptor(bearer(ApiCluster.TOKEN)));
        // The cluster answers once it has a leader and the gateway's SDK holds the policies.
        final String[] refused = {"none"};
        Await.until("a node decision through the gateway", Duration.ofSeconds(30), () ->
        {
            try
            {
                return !acquire("warm-up", "/v1/warm-up", 1).getDecision().getDecidedLocally();
            }
            catch (final StatusRuntimeException e)
            {
                refused[0] = e.toString();
                return false;
            }
        }, () -> "the last refusal: " + refused[0]);
    }

    @AfterAll
    void stop() throws InterruptedException
    {
        if (channel != null)
        {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (cluster != null)
        {
            cluster.close();
        }
    }

    static Metadata bearer(final String token)
    {
        final Metadata headers = new Metadata();
        headers.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + token);
        return headers;
    }

    private <Q, A> A call(final io.grpc.Channel on, final MethodDescriptor<Q, A> method, final Q request)
    {
        return ClientCalls.blockingUnaryCall(on, method, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS),
            request);
    }

    private AcquireResponse acquire(final String tenant, final String route, final long cost)
    {
        return call(authed, RateLimiterMethods.ACQUIRE,
            AcquireRequest.newBuilder().setTenant(tenant).setRoute(route).setCost(cost).build());
    }

    /** Tokens left in the tenant's orders bucket, after taking one more to see it. */
    private long leftAfterOneMore(final String tenant)
    {
        final AcquireResponse answer = acquire(tenant, "/v1/orders/1", 1);
        assertFalse(answer.getDecision().getDecidedLocally(), answer.toString());
        return answer.getDecision().getRemaining();
    }

    private HttpResponse<String> post(final String path, final String body, final String token) throws Exception
    {
        final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
            + cluster.api().httpPort() + path)) .timeout(Duration.ofSeconds(5)).header("Content-Type",
            "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (token != null)
        {
            request.header("Authorization", "Bearer " + token);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static StatusRuntimeException refused(final Status.Code code, final Runnable call)
    {
        final StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call::run);
        assertEquals(code, e.getStatus().getCode(), e.toString());
        return e;
    }

    @Test
    void grpcAcquireGrantsTheBurstThenRefusesWithARetryAfter()
    {
        for (int i = 0; i < 5; i++)
        {
            final AcquireResponse answer = acquire("grpc-a", "/v1/orders/7", 1);
            assertTrue(answer.getDecision().getAllowed(), answer.toString());
            assertTrue(answer.getDecision().getDecisionId().matches("[0-9a-f]{16}-0"), answer.toString());
            assertEquals(4 - i, answer.getDecision().getRemaining());
            assertEquals("orders", answer.getDecision().getPolicyId());
        }
        final AcquireResponse refused = acquire("grpc-a", "/v1/orders/8", 1);
        assertFalse(refused.getDecision().getAllowed());
        assertEquals("RATE_LIMITED", refused.getDecision().getReason());
        assertTrue(refused.getDecision().getRetryAfterMs() > 0, refused.toString());
        assertFalse(refused.getDecision().getDecidedLocally());
    }

    @Test
    void httpAcquireAnswers200ThenA429WithRateLimitHeadersAndRetryAfter() throws Exception
    {
        final String body = "{\"tenant\":\"http-a\",\"route\":\"/v1/orders/1\",\"method\":\"post\",\"cost\":2}";
        final HttpResponse<String> first = post("/v1/acquire", body, ApiCluster.TOKEN);
        assertEquals(200, first.statusCode(), first.body());
        assertEquals("\"orders\";q=5;w=18000", first.headers().firstValue("RateLimit-Policy").orElseThrow());
        assertTrue(first.headers().firstValue("RateLimit").orElseThrow().startsWith("\"orders\";r=3;"),
            first.headers().toString());
        assertTrue(first.body().contains("\"allowed\":true"), first.body());
        final String id = first.headers().firstValue("Limiter-Decision-Id").orElseThrow();
        assertTrue(first.body().contains("\"decision_id\":\"" + id + "\""), first.body());
        assertEquals(200, post("/v1/acquire", body, ApiCluster.TOKEN).statusCode());
        final HttpResponse<String> refused = post("/v1/acquire", body, ApiCluster.TOKEN);
        assertEquals(429, refused.statusCode(), refused.body());
        assertTrue(Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow()) >= 1,
            refused.headers().toString());
        assertTrue(refused.body().contains("\"reason\":\"RATE_LIMITED\""), refused.body());
        assertEquals(0, leftAfterOneMore("http-a"), "2 + 2 charged, the refused 2 not: the last token is there");
    }

    @Test
    void aLeaseHoldsTheConcurrencyLimitUntilReleasedOverEitherTransport() throws Exception
    {
        final AcquireRequest export = AcquireRequest.newBuilder().setTenant("lease-a").setRoute("/v1/exports").build();
        final AcquireResponse held = call(authed, RateLimiterMethods.ACQUIRE_LEASE, export);
        assertTrue(held.getDecision().getAllowed(), held.toString());
        assertTrue(held.getLeaseId().startsWith("L1."), held.toString());
        final String body = "{\"tenant\":\"lease-a\",\"route\":\"/v1/exports\"}";
        final HttpResponse<String> second = post("/v1/leases", body, ApiCluster.TOKEN);
        assertEquals(429, second.statusCode(), second.body());
        final HttpResponse<String> released = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
            + cluster.api().httpPort() + "/v1/leases/" + held.getLeaseId())).header("Authorization", "Bearer "
            + ApiCluster.TOKEN).DELETE().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(204, released.statusCode(), released.body());
        final HttpResponse<String> again = post("/v1/leases", body, ApiCluster.TOKEN);
        assertEquals(200, again.statusCode(), again.body());
        final String id = again.body().replaceAll(".*\"lease_id\":\"([^\"]+)\".*\\s*", "$1");
        call(authed, RateLimiterMethods.RELEASE, ReleaseRequest.newBuilder().setLeaseId(id).build());
        assertTrue(call(authed, RateLimiterMethods.ACQUIRE_LEASE, export).getDecision().getAllowed(),
            "released over gRPC");
    }

    @Test
    void aBatchAnswersABadItemAloneAndChargesItNothing()
    {
        final AcquireBatchResponse answer = call(authed, RateLimiterMethods.ACQUIRE_BATCH,
            AcquireBatchRequest.newBuilder()
            .addItems(AcquireRequest.newBuilder().setTenant("batch-a").setRoute("/v1/orders/1"))
            .addItems(AcquireRequest.newBuilder().setTenant("batch-a").setRoute("/v1/orders/1").setCost(-3))
            .addItems(AcquireRequest.newBuilder().setRoute("/v1/orders/1"))
            .addItems(AcquireRequest.newBuilder().setTenant("batch-a").setRoute("/v1/orders/1").setCost(2))
            .build());
        assertEquals(4, answer.getResultsCount());
        assertTrue(answer.getResults(0).getAnswer().getDecision().getAllowed(), answer.toString());
        assertEquals("items[1].cost", answer.getResults(1).getProblem().getField(), answer.toString());
        assertEquals("INVALID_ARGUMENT", answer.getResults(1).getProblem().getCode());
        assertEquals("items[2].tenant", answer.getResults(2).getProblem().getField(), answer.toString());
        assertEquals(ItemResult.ResultCase.ANSWER, answer.getResults(3).getResultCase());
        assertEquals(1, leftAfterOneMore("batch-a"), "1 + 2 charged, the bad items nothing");
    }

    @Test
    void aTokenBoundToTenantsIsRefusedAnyOtherTenantOnEitherPortAndChargesItNothing() throws Exception
    {
        final io.grpc.Channel bound = ClientInterceptors.intercept(channel,
            MetadataUtils.newAttachHeadersInterceptor(bearer(ApiCluster.BOUND_TOKEN)));
        final AcquireRequest own = AcquireRequest.newBuilder().setTenant("bound-a").setRoute("/v1/orders/1").build();
        final AcquireRequest other = AcquireRequest.newBuilder().setTenant(" bound-other ").setRoute("/v1/orders/1")
            .setCost(2).build();
        assertTrue(call(bound, RateLimiterMethods.ACQUIRE, own).getDecision().getAllowed());
        assertTrue(refused(Status.Code.PERMISSION_DENIED, () -> call(bound, RateLimiterMethods.ACQUIRE, other))
            .getStatus().getDescription().contains("may not ask for tenant 'bound-other'"));

        final AcquireBatchResponse batch = call(bound, RateLimiterMethods.ACQUIRE_BATCH, AcquireBatchRequest
            .newBuilder().addItems(own).addItems(other).addItems(own.toBuilder().setTenant("bound-b")).build());
        assertTrue(batch.getResults(0).getAnswer().getDecision().getAllowed(), batch.toString());
        assertEquals("PERMISSION_DENIED", batch.getResults(1).getProblem().getCode(), batch.toString());
        assertEquals("items[1].tenant", batch.getResults(1).getProblem().getField());
        assertTrue(batch.getResults(2).getAnswer().getDecision().getAllowed(), batch.toString());

        final HttpResponse<String> forbidden = post("/v1/acquire",
            "{\"tenant\":\"bound-other\",\"route\":\"/v1/orders/1\",\"cost\":2}", ApiCluster.BOUND_TOKEN);
        assertEquals(403, forbidden.statusCode(), forbidden.body());
        assertTrue(forbidden.body().contains("PERMISSION_DENIED"), forbidden.body());
        assertEquals(200, post("/v1/acquire", "{\"tenant\":\"bound-b\",\"route\":\"/v1/orders/1\"}",
            ApiCluster.BOUND_TOKEN).statusCode());
        assertEquals(4, leftAfterOneMore("bound-other"), "three refusals of cost 2 charged nothing");
        assertEquals(2, leftAfterOneMore("bound-a"), "bound-a: 2 granted, then 1 more of its 5");
    }

    @Test
    void hostileGrpcRequestsFailNamingTheFieldAndChargeNothing()
    {
        final AcquireRequest.Builder valid = AcquireRequest.newBuilder().setTenant("grpc-x").setRoute("/v1/orders/1");
        final AcquireRequest unknown = valid.clone().setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(99, UnknownFieldSet.Field.newBuilder().addVarint(7).build()).build()).build();
        assertTrue(refused(Status.Code.INVALID_ARGUMENT, () -> call(authed, RateLimiterMethods.ACQUIRE, unknown))
            .getStatus().getDescription().startsWith("field 99: not a field of limiter.v1.AcquireRequest"));
        for (final long cost : new long[] {-1, 1L << 40, Long.MIN_VALUE})
        {
            final AcquireRequest request = valid.clone().setCost(cost).build();
            assertTrue(refused(Status.Code.INVALID_ARGUMENT, () -> call(authed, RateLimiterMethods.ACQUIRE, request))
                .getStatus().getDescription().startsWith("cost: must be 1 to 2147483647 tokens (0: 1), was " + cost));
        }
        assertTrue(refused(Status.Code.INVALID_ARGUMENT, () -> call(authed, RateLimiterMethods.ACQUIRE,
            valid.clone().setTenant("").build())) .getStatus().getDescription().contains("tenant"));
        assertTrue(refused(Status.Code.INVALID_ARGUMENT, () -> call(authed, RateLimiterMethods.ACQUIRE,
            valid.clone().setTenant("grpc-x").setClientAddress("not-an-ip").build())).getStatus().getDescription()
            .contains("client"));
        refused(Status.Code.RESOURCE_EXHAUSTED, () -> call(authed, RateLimiterMethods.ACQUIRE,
            valid.clone().setPrincipal("p".repeat(ApiServer.MAX_REQUEST_BYTES + 1)).build()));
        // Above the burst: a decision (refused, never retryable), not an error; nothing charged.
        final AcquireResponse tooBig = acquire("grpc-x", "/v1/orders/1", Integer.MAX_VALUE);
        assertEquals("COST_EXCEEDS_BURST", tooBig.getDecision().getReason(), tooBig.toString());
        assertEquals(-1, tooBig.getDecision().getRetryAfterMs());
        refused(Status.Code.UNAUTHENTICATED, () -> call(channel, RateLimiterMethods.ACQUIRE, valid.build()));
        final io.grpc.Channel wrong = ClientInterceptors.intercept(channel,
            MetadataUtils.newAttachHeadersInterceptor(bearer("x" + ApiCluster.TOKEN)));
        refused(Status.Code.UNAUTHENTICATED, () -> call(wrong, RateLimiterMethods.ACQUIRE, valid.build()));
        refused(Status.Code.INVALID_ARGUMENT, () -> call(authed, RateLimiterMethods.ACQUIRE_BATCH,
            AcquireBatchRequest.getDefaultInstance()));
        refused(Status.Code.INVALID_ARGUMENT, () -> call(authed, RateLimiterMethods.RELEASE,
            ReleaseRequest.newBuilder().setLeaseId("L1.nope").build()));
        assertEquals(4, leftAfterOneMore("grpc-x"), "only the last call was charged");
    }

    @Test
    void hostileHttpBodiesGet400NamingTheFieldAndChargeNothing() throws Exception
    {
        final List<String[]> cases = List.of(
            new String[] {"{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\",\"sneaky\":1}", "sneaky"},
            new String[] {"{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\",\"cost\":1e12}", "cost"},
            new String[] {"{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\",\"cost\":99999999999999999999999}",
                "cost"},
            new String[] {"{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\",\"cost\":-5}", "cost"},
            new String[] {"{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\",\"cost\":\"two\"}", "cost"},
            new String[] {"{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\",\"cost\":1.5}", "cost"},
            new String[] {"{\"route\":\"/v1/orders/1\"}", "tenant"},
            new String[] {"{\"tenant\":\"" + "t".repeat(65) + "\",\"route\":\"/v1/orders/1\"}", "tenant"},
            new String[] {"{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\",\"client_address\":\"999.1.1.1\"}",
                "client_address"},
            new String[] {"{\"tenant\":\"http-x\",\"route\":", "body"},
            new String[] {"{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\"} {}", "body"},
            new String[] {"[{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\"}]", "body"},
            new String[] {"{\"tenant\":\"http-x\",\"tenant\":\"other\",\"route\":\"/v1/orders/1\"}", "tenant"});
        for (final String[] c : cases)
        {
            final HttpResponse<String> answer = post("/v1/acquire", c[0], ApiCluster.TOKEN);
            assertEquals(400, answer.statusCode(), c[0] + " -> " + answer.body());
            assertTrue(answer.body().contains("\"field\":\"" + c[1] + "\""), c[0] + " -> " + answer.body());
            assertTrue(answer.body().contains("\"code\":\"INVALID_ARGUMENT\""), answer.body());
        }
        final HttpResponse<String> nested = post("/v1/acquire/batch",
            "{\"items\":[{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\"}," +
                "{\"tenant\":\"http-x\",\"route\":\"/\",\"bogus\":true}]}", ApiCluster.TOKEN);
        assertEquals(400, nested.statusCode(), nested.body());
        assertTrue(nested.body().contains("\"field\":\"items[1].bogus\""), nested.body());
        final HttpResponse<String> oversized = post("/v1/acquire",
            "{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\",\"principal\":\""
            + "p".repeat(ApiServer.MAX_REQUEST_BYTES) + "\"}", ApiCluster.TOKEN);
        assertEquals(413, oversized.statusCode());
        final String valid = "{\"tenant\":\"http-x\",\"route\":\"/v1/orders/1\"}";
        assertEquals(401, post("/v1/acquire", valid, "x" + ApiCluster.TOKEN).statusCode());
        final HttpResponse<String> none = post("/v1/acquire", valid, null);
        assertEquals(401, none.statusCode());
        assertTrue(none.body().contains("\"field\":\"authorization\""), none.body());
        assertEquals(404, post("/v1/nothing", valid, ApiCluster.TOKEN).statusCode());
        assertEquals(4, leftAfterOneMore("http-x"), "nothing refused was charged");
    }

    @Test
    void aRequestPipelinedBehindAnotherIsNotDecidedAndTheConnectionClosesAfterTheFirstAnswer() throws Exception
    {
        final String body = "{\"tenant\":\"pipe-x\",\"route\":\"/v1/orders/1\"}";
        final String one = "POST /v1/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + ApiCluster.TOKEN
            + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body;
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", cluster.api().httpPort()))
        {
            socket.setSoTimeout(5000);
            socket.getOutputStream().write((one + one + one).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            final String answered = new String(socket.getInputStream().readAllBytes(),
                java.nio.charset.StandardCharsets.US_ASCII);
            assertEquals(1, answered.split("HTTP/1.1 ", -1).length - 1, "one answer, then the connection closes: "
                + answered);
            assertTrue(answered.startsWith("HTTP/1.1 200"), answered);
        }
        assertEquals(3, leftAfterOneMore("pipe-x"), "only the first of the three requests was charged");
    }

    @Test
    void thePythonExampleGetsDecisionsA429AndLeasesOverGrpc() throws Exception
    {
        Examples.assumeTools(Examples.missingPython());
        final Examples.Run run = Examples.run(Examples.pythonCommand(cluster.api().grpcPort(), ApiCluster.TOKEN,
            "py-a"), Map.of());
        assertEquals(0, run.exit(), run.output());
        final String out = run.output();
        assertTrue(out.contains("acquire allowed=True reason=ALLOWED remaining=4 limit=5"), out);
        assertTrue(out.contains("acquire allowed=False reason=RATE_LIMITED remaining=0"), out);
        assertTrue(out.contains("invalid INVALID_ARGUMENT cost: must be 1 to 2147483647 tokens (0: 1), was -1"), out);
        assertTrue(out.matches("(?s).*lease allowed=True reason=ALLOWED .* lease=L1\\.\\S+.*"), out);
        assertTrue(out.contains("lease allowed=False"), out);
        assertTrue(out.contains("released L1."), out);
        assertEquals(0, leftAfterOneMore("py-a"), "5 charged, the refused and the invalid ones not");
    }

    @Test
    void theCurlExampleGetsDecisionsA429WithHeadersAndLeases() throws Exception
    {
        Examples.assumeTools(Examples.missingCurl());
        final Examples.Run run = Examples.run(List.of("bash",
            Examples.root().resolve("examples/curl/limiter.sh").toString()), Map.of("LIMITER_HTTP",
            "http://127.0.0.1:" + cluster.api().httpPort(), "LIMITER_TOKEN", ApiCluster.TOKEN, "TENANT", "curl-a",
                "LEASE_ROUTE", "/v1/exports"));
        assertEquals(0, run.exit(), run.output());
        final String out = run.output();
        assertTrue(out.contains("HTTP/1.1 200 OK"), out);
        assertTrue(out.contains("HTTP/1.1 429 Too Many Requests"), out);
        assertTrue(out.matches("(?s).*\\nRetry-After: \\d+\\n.*"), out);
        assertTrue(out.contains("RateLimit-Policy: \"orders\";q=5;w=18000"), out);
        assertTrue(out.contains("\"field\":\"cost\"") && out.contains(" 400"), out);
        assertTrue(out.matches("(?s).*lease: \\{.*\"lease_id\":\"L1\\.[^\"]+\"\\}\\s+200\\s.*"), out);
        assertTrue(out.matches("(?s).*second lease: " +
            "\\{\"decision\":\\{\"reason\":\"RATE_LIMITED\"[^\\n]*\\}\\s+429\\s.*"), out);
        assertTrue(out.contains("release: 204"), out);
    }
}
