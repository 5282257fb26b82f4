package dev.limiter.spring;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.ClassUtils;

/**
 * Whether the starter registers its WebFlux filter: {@code limiter.web.enabled} when set; unset, yes,
 * but in a Spring Cloud Gateway application, whose {@code RateLimiter} charges each request already
 * (the filter would charge it a second time, even when the gateway then refuses it).
 */
final class WebFilterWanted extends SpringBootCondition
{
    static final String GATEWAY_RATE_LIMITER = "org.springframework.cloud.gateway.filter.ratelimit.RateLimiter";

    @Override
    public ConditionOutcome getMatchOutcome(final ConditionContext context, final AnnotatedTypeMetadata metadata)
    {
        final String enabled = context.getEnvironment().getProperty("limiter.web.enabled");
        if (enabled != null)
        {
            return Boolean.parseBoolean(enabled.trim()) ? ConditionOutcome.match("limiter.web.enabled=true")
                : ConditionOutcome.noMatch("limiter.web.enabled=false");
        }
        return ClassUtils.isPresent(GATEWAY_RATE_LIMITER, context.getClassLoader())
            ? ConditionOutcome.noMatch("a Spring Cloud Gateway application: its RateLimiter limits requests "
                + "(limiter.web.enabled=true registers the WebFilter as well)")
            : ConditionOutcome.match("limiter.web.enabled unset");
    }
}
