package dev.limiter.server.metrics;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the node's registry prints for the decision latency, which the SLO rules read. */
class ServerMetricsTest
{
    @Test
    void theDecisionLatencyIsAHistogramWithTheSloBuckets()
    {
        final ServerMetrics metrics = new ServerMetrics();
        metrics.recordFrameLatency(TimeUnit.MICROSECONDS.toNanos(30));
        metrics.recordFrameLatency(TimeUnit.MILLISECONDS.toNanos(3));
        metrics.recordFrameLatency(TimeUnit.MILLISECONDS.toNanos(50));
        final String scraped = metrics.scrape();
        assertTrue(scraped.contains("limiter_decision_latency_seconds_bucket{le=\"0.001\"} 1"), scraped);
        assertTrue(scraped.contains("limiter_decision_latency_seconds_bucket{le=\"0.005\"} 2"), scraped);
        assertTrue(scraped.contains("limiter_decision_latency_seconds_bucket{le=\"+Inf\"} 3"), scraped);
        assertTrue(scraped.contains("limiter_decision_latency_seconds_count 3"), scraped);
        assertTrue(scraped.contains("limiter_decision_latency_seconds_bucket{le=\"1.0E-5\"} 0"), scraped);
        assertTrue(scraped.contains("# TYPE limiter_decision_latency_seconds histogram"), scraped);
    }
}
