package dev.limiter.client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Renders a {@link Decision} as HTTP response header fields: {@code Retry-After} (RFC 9110, whole
 * seconds, rounded up) on denials, and the {@code RateLimit-Policy} / {@code RateLimit} fields of
 * draft-ietf-httpapi-ratelimit-headers (structured-field lists):
 *
 * <pre>
 * RateLimit-Policy: "orders-per-tenant";q=100;w=10
 * RateLimit: "orders-per-tenant";r=0;t=1
 * Retry-After: 1
 * Limiter-Decision-Id: 3f9a0c1be4d27a10-2
 * </pre>
 *
 * For a token bucket the quota {@code q} is the burst and the window {@code w} the seconds an empty
 * bucket takes to fill; {@code r} is the tokens left and {@code t} the seconds until full.
 * {@code Limiter-Decision-Id} names a node's decision ({@link Decision#decisionId()}), allowed or not,
 * for {@code ./limiter appeal add}; a decision the SDK made alone has none.
 */
public final class RateLimitHeaders
{
    public static final int TOO_MANY_REQUESTS = 429;
    /** The header naming the node's decision ({@link Decision#decisionId()}). */
    public static final String DECISION_ID = "Limiter-Decision-Id";

    private RateLimitHeaders()
    {
    }

    /** Header fields to add to the response for this decision (allowed or not), in a stable order. */
    public static Map<String, String> of(final Decision decision)
    {
        final Map<String, String> headers = new LinkedHashMap<>();
        final String name = quote(decision.policyId());
        final long windowSeconds = decision.windowSeconds();
        headers.put("RateLimit-Policy", name + ";q=" + decision.limit() + ";w=" + windowSeconds);
        headers.put("RateLimit", name + ";r=" + decision.remaining() + ";t=" + ceilSeconds(decision.resetAfterNanos()));
        if (!decision.allowed() && decision.retryable())
        {
            headers.put("Retry-After", Long.toString(retryAfterSeconds(decision)));
        }
        decision.decisionId().ifPresent(id -> headers.put(DECISION_ID, id));
        return headers;
    }

    /**
     * Retry-After in whole seconds, rounded up so a client that honours it is never early; at
     * least 1 for a denial. -1 when retrying can never succeed (send no Retry-After then).
     */
    public static long retryAfterSeconds(final Decision decision)
    {
        if (!decision.retryable())
        {
            return -1;
        }
        if (decision.allowed())
        {
            return 0;
        }
        return Math.max(1, ceilSeconds(decision.retryAfterNanos()));
    }

    /** The HTTP status for a decision: 200 when allowed, 429 otherwise. */
    public static int status(final Decision decision)
    {
        return decision.allowed() ? 200 : TOO_MANY_REQUESTS;
    }

    static long ceilSeconds(final long nanos)
    {
        return nanos <= 0 ? 0 : (nanos + 999_999_999L) / 1_000_000_000L;
    }

    private static String quote(final String id)
    {
        // Policy ids are [a-z0-9._-]: nothing to escape in a structured-field string.
        return '"' + (id == null ? "default" : id) + '"';
    }
}
