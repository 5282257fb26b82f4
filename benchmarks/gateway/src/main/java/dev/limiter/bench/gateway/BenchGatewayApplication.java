package dev.limiter.bench.gateway;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.Mono;

/**
 * The gateway under test: one route, {@code bench} ({@code /bench/**}), to the upstream at
 * {@code bench.upstream}, in one of three configurations chosen by {@code spring.profiles.active}:
 * {@code none} (no filter), {@code redis} (RequestRateLimiter with RedisRateLimiter) or {@code limiter}
 * (RequestRateLimiter with LimiterRateLimiter). The route and the KeyResolver are the same in all three;
 * only the route's filter differs (application-*.yml).
 */
@SpringBootApplication
public class BenchGatewayApplication
{
    /** The header the load generator names each request's tenant in. */
    public static final String TENANT_HEADER = "X-Tenant";

    /** The tenant header's value as the key, for both limiters; a request without one is the gateway's (403). */
    @Bean
    KeyResolver tenantKeyResolver()
    {
        return exchange -> Mono.justOrEmpty(exchange.getRequest().getHeaders().getFirst(TENANT_HEADER));
    }

    public static void main(final String[] args)
    {
        SpringApplication.run(BenchGatewayApplication.class, args);
    }
}
