package dev.limiter.spring;

import dev.limiter.client.LimiterClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.actuate.health.Health;
import org.springframework.http.HttpStatus;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.publisher.Mono;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** With no node listening: what the health component and the WebFilter's refusals say. */
@Timeout(30)
class UnreachableLimiterTest
{
    private static LimiterClient client;

    @BeforeAll
    static void clientOfANodeThatIsNotThere() throws IOException
    {
        final int port;
        try (ServerSocket free = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()))
        {
            port = free.getLocalPort(); // closed again: nothing listens there
        }
        client = LimiterClient.builder().endpoints("127.0.0.1:" + port).startupTimeout(Duration.ZERO)
            .deadline(Duration.ofMillis(50)).build();
    }

    @AfterAll
    static void close()
    {
        client.close();
    }

    @Test
    void theHealthComponentIsDegradedNotDownWhenNoNodeAnswers()
    {
        final Health health = new Boot3HealthIndicator(client, Duration.ofMillis(200)).health();
        assertEquals(LimiterHealth.DEGRADED, health.getStatus().getCode());
        assertTrue(health.getDetails().containsKey("error"), health.getDetails().toString());
        assertEquals(0, health.getDetails().get("openConnections"));
    }

    @Test
    void aRequestWithAFieldTheLimiterCannotUseIsAnswered400ByItselfAndNeverReachesTheApplication()
    {
        final LimiterWebFilter filter = new LimiterWebFilter(client, ExchangeDescriptors.fromHeaders("X-Tenant-Id",
            null, null), 1);
        final MockServerWebExchange exchange = MockServerWebExchange.from(MockServerHttpRequest.get("/v1/orders/1")
            .remoteAddress(new InetSocketAddress("10.0.0.9", 40000)).header("X-Tenant-Id", "ac\u0001me"));
        final AtomicBoolean reached = new AtomicBoolean();
        filter.filter(exchange, e -> Mono.fromRunnable(() -> reached.set(true))).block(Duration.ofSeconds(5));
        assertEquals(HttpStatus.BAD_REQUEST, exchange.getResponse().getStatusCode());
        assertFalse(reached.get());
        assertTrue(exchange.getResponse().getBodyAsString().block(Duration.ofSeconds(5)).contains("tenant"),
            "the answer names the field");
    }

    @Test
    void aRequestWithNoTenantHeaderAndNoRemoteAddressIsAnswered400()
    {
        final LimiterWebFilter filter = new LimiterWebFilter(client, ExchangeDescriptors.fromHeaders("X-Tenant-Id",
            null, null), 1);
        final MockServerWebExchange exchange = MockServerWebExchange.from(MockServerHttpRequest.get("/v1/orders/1"));
        final AtomicBoolean reached = new AtomicBoolean();
        filter.filter(exchange, e -> Mono.fromRunnable(() -> reached.set(true))).block(Duration.ofSeconds(5));
        assertEquals(HttpStatus.BAD_REQUEST, exchange.getResponse().getStatusCode());
        assertFalse(reached.get());
    }
}
