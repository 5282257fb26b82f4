package dev.limiter.server.history;

import java.util.Map;

/**
 * What a node has counted since it started, read at one moment: cumulative counts per policy
 * and the decision latency p99 of the moment.
 *
 * @param counts          per policy id, {@link #KINDS} cumulative counts indexed by {@link #ALLOWED} ...
 *                        {@link #FALSE_REJECTIONS}
 * @param latencyP99Micros the decision latency's 99th percentile now (the timer's recent window), microseconds
 */
record HistoryReading(Map<String, long[]> counts, long latencyP99Micros)
{
    /** Decisions allowed ({@code limiter_decisions_total{outcome="allowed"}}). */
    static final int ALLOWED = 0;
    /** Decisions refused ({@code limiter_decisions_total{outcome="denied"}}). */
    static final int DENIED = 1;
    /** Shadow evaluations that would have refused ({@code limiter_shadow_decisions_total{outcome="would_deny"}}). */
    static final int SHADOW_WOULD_DENY = 2;
    /** Shadow evaluations that would have allowed ({@code limiter_shadow_decisions_total{outcome="would_allow"}}). */
    static final int SHADOW_WOULD_ALLOW = 3;
    /** Appeals accepted as false rejections ({@code limiter_false_rejections_total}). */
    static final int FALSE_REJECTIONS = 4;
    /** Counts per policy. */
    static final int KINDS = 5;
}
