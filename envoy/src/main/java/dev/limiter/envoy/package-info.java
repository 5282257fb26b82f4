/**
 * Envoy's rate limit service (v3, gRPC) answered by the store: a stateless gateway built on the
 * SDK only. {@link dev.limiter.envoy.RateLimitGateway} maps requests to decisions,
 * {@link dev.limiter.envoy.RlsServer} serves it, {@link dev.limiter.envoy.RlsMain} is
 * {@code ./limiter rls} and {@link dev.limiter.envoy.RlsBench} its open-loop load generator, whose loop
 * ({@link dev.limiter.envoy.OpenLoop}) {@code ./limiter api bench} runs too.
 */
package dev.limiter.envoy;
