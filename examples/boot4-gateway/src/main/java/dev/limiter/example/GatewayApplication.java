package dev.limiter.example;

import dev.limiter.gateway.LimiterRateLimiter;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.cloud.gateway.route.RouteLocator;
import org.springframework.cloud.gateway.route.builder.RouteLocatorBuilder;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.Mono;

/**
 * A gateway whose {@code orders} route is limited by the limiter where RedisRateLimiter would be:
 * {@code RequestRateLimiter} with the {@code limiterRateLimiter} bean and a KeyResolver of the tenant
 * header, in front of the orders service at {@code orders.uri}.
 */
@SpringBootApplication
public class GatewayApplication
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

    public static void main(final String[] args)
    {
        SpringApplication.run(GatewayApplication.class, args);
    }
}
