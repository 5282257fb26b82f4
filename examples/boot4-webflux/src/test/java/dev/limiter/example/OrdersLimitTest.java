package dev.limiter.example;

import dev.limiter.testnodes.NodeJvm;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.env.Environment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The WebFlux example service with the starter, against a real node in a JVM of its own: a tenant's requests
 * beyond its policy's burst are answered 429 with Retry-After by the application, another tenant's
 * still pass, the health component says a node answered, and the SDK's meters are in the registry.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Timeout(60)
class OrdersLimitTest
{
    /** Three reads per tenant, refilled once an hour: the fourth is refused within any test run. */
    private static final String POLICIES = """
        {
          "version": 1,
          "defaultPolicy": {
            "id": "default", "rate": 1000, "period": "1s", "burst": 1000, "scope": "TENANT",
            "owner": "example", "reason": "everything else"
          },
          "policies": [
            {
              "id": "orders-read", "selector": { "route": "/v1/orders/{id}" },
              "rate": 1, "period": "3600s", "burst": 3, "scope": "TENANT",
              "owner": "example", "reason": "three reads per tenant"
            }
          ]
        }
        """;

    private static NodeJvm node;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Autowired
    private Environment environment;
    @Autowired
    private MeterRegistry meters;

    @BeforeAll
    static void startNode() throws Exception
    {
        node = NodeJvm.startWithPolicies(POLICIES, Duration.ofSeconds(30));
    }

    @AfterAll
    static void stopNode() throws Exception
    {
        if (node != null)
        {
            node.close();
        }
    }

    @DynamicPropertySource
    static void limiter(final DynamicPropertyRegistry registry)
    {
        registry.add("limiter.endpoints", () -> node.address());
        // A cold JVM on a shared 2-core machine: the first calls can take longer than the SDK's default 20 ms.
        registry.add("limiter.deadline", () -> "2s");
    }

    private HttpResponse<String> get(final String path, final String tenant) throws IOException, InterruptedException
    {
        final HttpRequest.Builder request = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + environment.getProperty("local.server.port") + path))
            .timeout(Duration.ofSeconds(10));
        if (tenant != null)
        {
            request.header("X-Tenant-Id", tenant);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aTenantBeyondItsBurstGets429WithRetryAfterAndAnotherTenantStillPasses() throws Exception
    {
        for (int i = 1; i <= 3; i++)
        {
            final HttpResponse<String> allowed = get("/v1/orders/" + i, "acme");
            assertEquals(200, allowed.statusCode(), "request " + i + ": " + allowed.body());
            assertEquals("order " + i + "\n", allowed.body());
            assertTrue(allowed.headers().firstValue("RateLimit-Policy").orElse("").contains("orders-read"),
                "request " + i + " headers: " + allowed.headers().map());
        }
        final HttpResponse<String> refused = get("/v1/orders/4", "acme");
        assertEquals(429, refused.statusCode(), refused.body());
        final long retryAfter = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retryAfter > 0 && retryAfter <= 3600, "Retry-After " + retryAfter);
        assertTrue(refused.body().contains("orders-read"), refused.body());
        assertTrue(refused.headers().firstValue("Limiter-Decision-Id").orElse("").matches("[0-9a-f]{16}-[0-9]+"),
            "the starter's WebFilter names the node's decision: " + refused.headers().map());
        assertEquals(200, get("/v1/orders/1", "globex").statusCode(), "another tenant has a bucket of its own");
    }

    @Test
    void theHealthComponentSaysANodeAnsweredAndTheSdkMetersAreBound() throws Exception
    {
        final HttpResponse<String> health = get("/actuator/health", "health-checker");
        assertEquals(200, health.statusCode(), health.body());
        // {"limiter":{"status":"UP","details":{...}}} (Boot 3) or {"limiter":{"details":{...},"status":"UP"}} (Boot 4)
        assertTrue(health.body().replace(" ", "")
            .matches(".*\"limiter\":\\{(\"details\":\\{[^}]*},)?\"status\":\"UP\".*"), health.body());
        assertNotNull(meters.find("limiter.sdk.policy.version").gauge(),
            "the SDK's meters on the application's registry");
    }
}
