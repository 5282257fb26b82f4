package dev.limiter.spring;

import dev.limiter.client.LimiterClient;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code limiter} health component, with whichever health API the application's Boot has: Boot
 * 4's {@code org.springframework.boot.health.contributor}, else Boot 3's actuator one. The bean's name
 * is the component's name.
 */
@AutoConfiguration(after = LimiterAutoConfiguration.class)
@ConditionalOnBean(LimiterClient.class)
public class LimiterHealthAutoConfiguration
{
    private static final String BOOT4 = "org.springframework.boot.health.contributor.HealthIndicator";

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = BOOT4)
    static class Boot4
    {
        @Bean(name = "limiterHealthIndicator")
        Boot4HealthIndicator limiterHealthIndicator(final LimiterClient client, final LimiterProperties properties)
        {
            return new Boot4HealthIndicator(client, properties.getHealth().getTimeout());
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass(BOOT4)
    @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
    static class Boot3
    {
        @Bean(name = "limiterHealthIndicator")
        Boot3HealthIndicator limiterHealthIndicator(final LimiterClient client, final LimiterProperties properties)
        {
            return new Boot3HealthIndicator(client, properties.getHealth().getTimeout());
        }
    }
}
