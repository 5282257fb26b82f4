package dev.limiter.spring;

import dev.limiter.client.LimiterClient;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;

/**
 * WebFlux: the {@link LimiterWebFilter}, naming requests by an {@link ExchangeDescriptors} bean (the
 * application's own, or the headers of {@code limiter.web.*}); not in a Spring Cloud Gateway
 * application unless asked for ({@link WebFilterWanted}).
 */
@AutoConfiguration(after = LimiterAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass(name = "org.springframework.web.server.WebFilter")
@ConditionalOnBean(LimiterClient.class)
@Conditional(WebFilterWanted.class)
public class LimiterWebFluxAutoConfiguration
{
    @Bean
    @ConditionalOnMissingBean
    ExchangeDescriptors limiterExchangeDescriptors(final LimiterProperties properties)
    {
        final LimiterProperties.Web web = properties.getWeb();
        return ExchangeDescriptors.fromHeaders(web.getTenantHeader(), web.getPrincipalHeader(),
            web.getClientIpHeader());
    }

    @Bean
    @ConditionalOnMissingBean
    LimiterWebFilter limiterWebFilter(final LimiterClient client, final ExchangeDescriptors descriptors,
        final LimiterProperties properties)
    {
        return new LimiterWebFilter(client, descriptors, properties.getWeb().getCost());
    }
}
