/**
 * The node's own bounded history ({@code GET /v1/history}): per-interval deltas of its decisions,
 * shadow evaluations and false rejections per policy, its decision latency p99 and the SDKs' degraded
 * windows, kept in a fixed-size ring and sampled off the decision path. {@code ./limiter report} reads it.
 */
package dev.limiter.server.history;
