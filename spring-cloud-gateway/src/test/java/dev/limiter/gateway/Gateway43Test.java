package dev.limiter.gateway;

import com.sun.net.httpserver.HttpServer;
import dev.limiter.testnodes.NodeJvm;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.cloud.gateway.route.RouteLocator;
import org.springframework.cloud.gateway.route.builder.RouteLocatorBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import reactor.core.publisher.Mono;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * LimiterRateLimiter on the line it is compiled against: Spring Cloud Gateway 4.3 on Boot 3.5.7 (Netty
 * 4.1), against a real node: a tenant's fourth request on a three-token route is answered 429.
 */
@SpringBootTest(classes = Gateway43Test.Gateway.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "limiter.web.enabled=false")
@Timeout(60)
class Gateway43Test
{
    private static final String POLICIES = """
        {
          "version": 1,
          "defaultPolicy": {
            "id": "default", "rate": 1000, "period": "1s", "burst": 1000, "scope": "TENANT",
            "owner": "test", "reason": "everything else"
          },
          "policies": [
            {
              "id": "orders-route", "selector": { "route": "/orders" },
              "rate": 1, "period": "3600s", "burst": 3, "scope": "TENANT",
              "owner": "test", "reason": "three requests per tenant on the orders route"
            }
          ]
        }
        """;

    private static NodeJvm node;
    private static HttpServer orders;

    @Autowired
    private Environment environment;

    /** A gateway with one RequestRateLimiter route in front of the test's orders service. */
    @SpringBootApplication
    static class Gateway
    {
        @Bean
        KeyResolver tenantKeyResolver()
        {
            return exchange -> Mono.justOrEmpty(exchange.getRequest().getHeaders().getFirst("X-Tenant-Id"));
        }

        @Bean
        RouteLocator routes(final RouteLocatorBuilder routes, final LimiterRateLimiter limiter,
            final KeyResolver tenantKeyResolver, @Value("${orders.uri}") final String ordersUri)
        {
            return routes.routes()
                .route("orders", route -> route.path("/api/orders/**")
                    .filters(filter -> filter.stripPrefix(1)
                        .requestRateLimiter(config -> config.setRateLimiter(limiter).setKeyResolver(tenantKeyResolver)))
                    .uri(ordersUri))
                .build();
        }
    }

    @BeforeAll
    static void start() throws Exception
    {
        node = NodeJvm.startWithPolicies(POLICIES, Duration.ofSeconds(30));
        orders = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        orders.createContext("/orders/", exchange ->
        {
            final byte[] body = "order\n".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        orders.start();
    }

    @AfterAll
    static void stop() throws Exception
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
    static void properties(final DynamicPropertyRegistry registry)
    {
        registry.add("limiter.endpoints", () -> node.address());
        registry.add("limiter.deadline", () -> "2s"); // a cold JVM on a shared machine
        registry.add("orders.uri", () -> "http://127.0.0.1:" + orders.getAddress().getPort());
    }

    @Test
    void aTenantsFourthRequestOnAThreeTokenRouteIsAnswered429() throws Exception
    {
        final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        final HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" +
            environment.getProperty("local.server.port") + "/api/orders/1")).header("X-Tenant-Id", "acme")
            .timeout(Duration.ofSeconds(10)).build();
        for (int i = 1; i <= 3; i++)
        {
            final HttpResponse<String> allowed = http.send(request, HttpResponse.BodyHandlers.ofString());
            assertEquals(200, allowed.statusCode(), "request " + i + ": " + allowed.body());
            assertEquals(Long.toString(3 - i), allowed.headers().firstValue("X-RateLimit-Remaining").orElse(""));
        }
        final HttpResponse<String> refused = http.send(request, HttpResponse.BodyHandlers.ofString());
        assertEquals(429, refused.statusCode());
        assertEquals(true, refused.headers().firstValue("Retry-After").isPresent(), refused.headers().map().toString());
        assertEquals(true, refused.headers().firstValue("Limiter-Decision-Id").isPresent(),
            refused.headers().map().toString());
    }
}
