/**
 * {@code limiter.v1.RateLimiter} (wire-protocol's {@code limiter/v1/rate_limiter.proto}): the
 * store's decisions for callers in any language, over gRPC and HTTP/JSON, asked through the SDK
 * ({@code ./limiter api}, docs/api.md).
 */
package dev.limiter.envoy.api;
