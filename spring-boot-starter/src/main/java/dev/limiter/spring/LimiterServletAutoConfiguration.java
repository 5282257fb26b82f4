package dev.limiter.spring;

import dev.limiter.client.LimiterClient;
import dev.limiter.servlet.LimiterFilter;
import dev.limiter.servlet.RequestDescriptors;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;

/**
 * Spring MVC (any servlet application): the {@link LimiterFilter} as a filter bean, which Boot maps to
 * every request. Requests are named by a {@link RequestDescriptors} bean: the application's own, or
 * the headers of {@code limiter.web.*} (the servlet module's rules: the last X-Forwarded-For entry,
 * HEAD as GET, the decoded path as the route).
 */
@AutoConfiguration(after = LimiterAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(name = "jakarta.servlet.Filter")
@ConditionalOnBean(LimiterClient.class)
@ConditionalOnProperty(prefix = "limiter.web", name = "enabled", matchIfMissing = true)
public class LimiterServletAutoConfiguration
{
    @Bean
    @ConditionalOnMissingBean
    RequestDescriptors limiterRequestDescriptors(final LimiterProperties properties)
    {
        final LimiterProperties.Web web = properties.getWeb();
        return RequestDescriptors.fromHeaders(web.getTenantHeader(), web.getPrincipalHeader(), web.getClientIpHeader());
    }

    @Bean
    @ConditionalOnMissingBean
    LimiterFilter limiterFilter(final LimiterClient client, final RequestDescriptors descriptors,
        final LimiterProperties properties)
    {
        return new LimiterFilter(client, descriptors).cost(properties.getWeb().getCost());
    }
}
