package dev.limiter.server;

import com.sun.net.httpserver.HttpServer;
import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.RateLimitHeaders;
import dev.limiter.client.Retrier;
import dev.limiter.server.engine.MonotonicClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The example of docs/sdk.md, run for real: an HTTP service asks the limiter before serving
 * and answers 429 with Retry-After and RateLimit headers; its caller retries with {@link Retrier}.
 */
@Timeout(60)
class HttpServiceExampleTest
{
    @TempDir
    Path dir;

    /** The service: one limiter call per request, the decision rendered as status and headers. */
    private static HttpServer service(final LimiterClient limiter) throws Exception
    {
        final HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        http.createContext("/", exchange ->
        {
            final String tenant = exchange.getRequestHeaders().getFirst("X-Tenant");
            final Decision decision = limiter.acquireBlocking(Descriptor.builder().tenant(tenant == null ? "anonymous" : tenant)
                .route(exchange.getRequestURI().getPath()).method(exchange.getRequestMethod()).build(), 1);
            for (final Map.Entry<String, String> header : RateLimitHeaders.of(decision).entrySet())
            {
                exchange.getResponseHeaders().set(header.getKey(), header.getValue());
            }
            final byte[] body = (decision.allowed() ? "order\n" : "slow down\n").getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(RateLimitHeaders.status(decision), body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        http.start();
        return http;
    }

    @Test
    void aServiceAnswers429WithRetryAfterAndItsCallerWaitsThatLongBeforeRetrying() throws Exception
    {
        try (StoreServer node = TestNode.start(dir, MonotonicClock.SYSTEM, 1);
             LimiterClient limiter = LimiterClient.builder().endpoints("127.0.0.1:" + node.port())
                 .deadline(Duration.ofSeconds(2)).build()) // the test counts the store's answers: no local ones on a slow CI machine
        {
            final HttpServer http = service(limiter);
            try
            {
                final HttpClient client = HttpClient.newHttpClient();
                final HttpRequest get = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http.getAddress().getPort() + "/v2/items/7"))
                    .header("X-Tenant", "acme").GET().build();
                // No policy names /v2/items: the baseline decides (burst 2 per tenant, 2/s).
                for (int i = 0; i < 2; i++)
                {
                    final HttpResponse<String> ok = client.send(get, HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, ok.statusCode());
                    assertTrue(ok.headers().firstValue("RateLimit").orElse("").startsWith("\"baseline\""), ok.headers().map().toString());
                }
                final HttpResponse<String> limited = client.send(get, HttpResponse.BodyHandlers.ofString());
                assertEquals(429, limited.statusCode());
                assertEquals("1", limited.headers().firstValue("Retry-After").orElse(""));

                final List<Duration> waited = new ArrayList<>();
                final Retrier retrier = Retrier.builder().sleeper(duration ->
                {
                    waited.add(duration);
                    // the retrier's sleeper: waiting is what it is asked to do
                    Thread.sleep(duration.toMillis());
                }).build();
                final HttpResponse<String> eventually = retrier.run(true, attempt ->
                {
                    final HttpResponse<String> response = client.send(get, HttpResponse.BodyHandlers.ofString());
                    if (response.statusCode() == 429)
                    {
                        final Duration after = response.headers().firstValue("Retry-After").map(s -> Duration.ofSeconds(Long.parseLong(s)))
                            .orElse(null);
                        return Retrier.Result.rateLimited(response, after);
                    }
                    return Retrier.Result.done(response);
                });
                assertEquals(200, eventually.statusCode(), "allowed once the Retry-After had passed");
                assertTrue(!waited.isEmpty() && waited.get(0).compareTo(Duration.ofSeconds(1)) >= 0, "waited as told: " + waited);
            }
            finally
            {
                http.stop(0);
            }
        }
    }

    @Test
    void withFastLocalRejectionARefusedDescriptorIsRefusedWithoutARoundTripUntilItsRetryAfter() throws Exception
    {
        try (StoreServer node = TestNode.start(dir, MonotonicClock.SYSTEM, 1);
             LimiterClient limiter = LimiterClient.builder().endpoints("127.0.0.1:" + node.port()).fastLocalRejection(true)
                 .deadline(Duration.ofSeconds(2)).build())
        {
            final Descriptor items = Descriptor.of("acme", "/v2/items/7"); // the baseline: burst 2, 2/s
            assertTrue(limiter.acquireBlocking(items, 1).allowed());
            assertTrue(limiter.acquireBlocking(items, 1).allowed());
            final Decision refused = limiter.acquireBlocking(items, 1);
            assertTrue(!refused.allowed() && refused.retryAfter().toMillis() > 100, refused.toString());
            final Decision again = limiter.acquireBlocking(items, 1);
            assertTrue(!again.allowed() && again.retryAfterNanos() <= refused.retryAfterNanos(), again.toString());
            assertEquals(1, limiter.stats().fastRejections(), "answered by the SDK");
            final String metrics = node.metrics().scrape();
            assertTrue(metrics.contains("limiter_decisions_total{outcome=\"denied\",policy=\"baseline\"} 1.0"),
                "the node saw one refusal, not two");
            // the Retry-After must pass: time itself is the condition
            Thread.sleep(again.retryAfter().toMillis() + 50);
            assertTrue(limiter.acquireBlocking(items, 1).allowed(), "after the Retry-After the cluster is asked, and allows");
        }
    }
}
