package dev.limiter.gateway;

import dev.limiter.client.LimiterClient;
import dev.limiter.spring.LimiterAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.cloud.gateway.support.ConfigurationService;
import org.springframework.context.annotation.Bean;

/**
 * The {@code limiterRateLimiter} bean, for routes to name as {@code rate-limiter: "#{@limiterRateLimiter}"}
 * where they named {@code #{@redisRateLimiter}}. Configured before the gateway's own auto-configuration,
 * as Redis' is: the gateway defines its RequestRateLimiter filter factory only where a RateLimiter bean
 * exists by then.
 */
@AutoConfiguration(after = LimiterAutoConfiguration.class,
    beforeName = "org.springframework.cloud.gateway.config.GatewayAutoConfiguration")
@ConditionalOnClass(name = "org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter")
@ConditionalOnBean(LimiterClient.class)
public class LimiterGatewayAutoConfiguration
{
    @Bean
    @ConditionalOnMissingBean
    LimiterRateLimiter limiterRateLimiter(final LimiterClient client, final ConfigurationService configuration)
    {
        return new LimiterRateLimiter(client, configuration);
    }
}
