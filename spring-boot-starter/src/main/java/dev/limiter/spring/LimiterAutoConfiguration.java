package dev.limiter.spring;

import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterMetrics;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The application's {@link LimiterClient}, built from {@code limiter.*} once {@code limiter.endpoints}
 * is set (an application's own LimiterClient bean takes its place), closed when the context closes;
 * with Micrometer present, the SDK's meters ({@code limiter.sdk.*}) on the application's registries.
 */
@AutoConfiguration
@ConditionalOnProperty(prefix = "limiter", name = "endpoints")
@EnableConfigurationProperties(LimiterProperties.class)
public class LimiterAutoConfiguration
{
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    LimiterClient limiterClient(final LimiterProperties properties)
    {
        return LimiterClients.build(properties);
    }

    /** Boot binds every MeterBinder bean to the application's MeterRegistry (Boot 3 and 4 alike). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterBinder.class)
    static class Metrics
    {
        @Bean
        MeterBinder limiterMeters(final LimiterClient client)
        {
            return registry -> LimiterMetrics.bind(client, registry);
        }
    }
}
