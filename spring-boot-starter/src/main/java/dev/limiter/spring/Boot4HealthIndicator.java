package dev.limiter.spring;

import dev.limiter.client.LimiterClient;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

import java.time.Duration;

/** {@link LimiterHealth} for Spring Boot 4 ({@code org.springframework.boot.health.contributor}). */
final class Boot4HealthIndicator implements HealthIndicator
{
    private final LimiterClient client;
    private final Duration timeout;

    Boot4HealthIndicator(final LimiterClient client, final Duration timeout)
    {
        this.client = client;
        this.timeout = timeout;
    }

    @Override
    public Health health()
    {
        final LimiterHealth.Report report = LimiterHealth.check(client, timeout);
        return (report.nodeAnswered() ? Health.up() : Health.status(LimiterHealth.DEGRADED))
            .withDetails(report.details()).build();
    }
}
