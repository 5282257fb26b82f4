package dev.limiter.example;

import dev.limiter.testnodes.NodeJvm;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.env.Environment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Spring Cloud Gateway 5.0 on Boot 4.0.7 with the limiter in RedisRateLimiter's place, against a real
 * node: the route's policy (selected by route {@code /orders}, the route id) allows a tenant three
 * requests; the fourth is answered 429 with Retry-After and the X-RateLimit-* and RateLimit headers.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Timeout(60)
class GatewayLimitTest
{
    private static final String POLICIES = """
        {
          "version": 1,
          "defaultPolicy": {
            "id": "default", "rate": 1000, "period": "1s", "burst": 1000, "scope": "TENANT",
            "owner": "example", "reason": "everything else"
          },
          "policies": [
            {
              "id": "orders-route", "selector": { "route": "/orders" },
              "rate": 1, "period": "3600s", "burst": 3, "scope": "TENANT",
              "owner": "example", "reason": "replenishRate 1/hour, burstCapacity 3, for the gateway's orders route"
            }
          ]
        }
        """;

    private static NodeJvm node;
    /** The orders service behind the gateway: answers "order ID" for /orders/ID. */
    private static HttpServer orders;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Autowired
    private Environment environment;

    @BeforeAll
    static void startNode() throws Exception
    {
        node = NodeJvm.startWithPolicies(POLICIES, Duration.ofSeconds(30));
        orders = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        orders.createContext("/orders/", exchange ->
        {
            final byte[] body = ("order " + exchange.getRequestURI().getPath().substring("/orders/".length()) + "\n")
                .getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        orders.start();
    }

    @AfterAll
    static void stopNode() throws Exception
    {
        try
        {
            if (orders != null)
            {
                orders.stop(0);
            }
        }
        finally
        {
            if (node != null)
            {
                node.close();
            }
        }
    }

    @DynamicPropertySource
    static void limiter(final DynamicPropertyRegistry registry)
    {
        registry.add("limiter.endpoints", () -> node.address());
        registry.add("orders.uri", () -> "http://127.0.0.1:" + orders.getAddress().getPort());
        // A cold JVM on a shared 2-core machine: the first calls can take longer than the SDK's default 20 ms.
        registry.add("limiter.deadline", () -> "2s");
    }

    private HttpResponse<String> get(final String path, final String tenant) throws IOException, InterruptedException
    {
        return http.send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + environment.getProperty("local.server.port") + path))
            .timeout(Duration.ofSeconds(10)).header("X-Tenant-Id", tenant).build(),
            HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aTenantBeyondTheRoutesBurstGets429WithRetryAfterAndTheRateLimitHeaders() throws Exception
    {
        for (int i = 1; i <= 3; i++)
        {
            final HttpResponse<String> allowed = get("/api/orders/" + i, "acme");
            assertEquals(200, allowed.statusCode(), "request " + i + ": " + allowed.body());
            assertEquals("order " + i + "\n", allowed.body());
            assertEquals(Long.toString(3 - i), allowed.headers().firstValue("X-RateLimit-Remaining").orElse(""),
                "request " + i + " headers: " + allowed.headers().map());
            assertEquals("3", allowed.headers().firstValue("X-RateLimit-Burst-Capacity").orElse(""));
            assertEquals("1", allowed.headers().firstValue("X-RateLimit-Requested-Tokens").orElse(""));
            assertTrue(allowed.headers().firstValue("RateLimit-Policy").orElse("").contains("orders-route"),
                allowed.headers().map().toString());
        }
        final HttpResponse<String> refused = get("/api/orders/4", "acme");
        assertEquals(429, refused.statusCode(), refused.body());
        final long retryAfter = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retryAfter > 0 && retryAfter <= 3600, "Retry-After " + retryAfter);
        assertEquals("0", refused.headers().firstValue("X-RateLimit-Remaining").orElse(""));
        assertTrue(refused.headers().firstValue("RateLimit").isPresent(), refused.headers().map().toString());
        assertEquals(200, get("/api/orders/1", "globex").statusCode(), "another tenant has a bucket of its own");
    }

    @Test
    void aGatewayApplicationGetsNoSecondLimiterFilterUnlessItAsksForOne(
        @Autowired final org.springframework.context.ApplicationContext context)
    {
        assertTrue(context.getBeansOfType(dev.limiter.spring.LimiterWebFilter.class).isEmpty(),
            "the gateway's RateLimiter charges each request once; the starter's WebFilter would charge it again");
    }

    @Test
    void aKeyTheLimiterCannotUseIsRefusedNotLetThroughUnlimited() throws Exception
    {
        final HttpResponse<String> refused = get("/api/orders/1", "t".repeat(300)); // beyond a tenant's 255 bytes
        assertEquals(429, refused.statusCode(), refused.body());
        assertEquals("1", refused.headers().firstValue("Retry-After").orElse(""));
    }
}
