/**
 * The admin port: HTTP(S) with a bearer token for every change (policies, exemptions, members),
 * {@code /metrics}, {@code /health}, {@code /status}; the token's resolution and file checks.
 */
package dev.limiter.server.admin;
