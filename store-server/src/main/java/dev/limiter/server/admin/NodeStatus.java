package dev.limiter.server.admin;

import dev.limiter.protocol.policy.HotKeyReport;

import java.util.concurrent.CompletableFuture;

/**
 * What the admin port reports of its node: {@code GET /status}, {@code GET /health}, {@code /health/live},
 * {@code /health/ready}, {@code GET /v1/hot-keys},
 * {@code GET /v1/history} and {@code GET /v1/policies/{id}/compare}.
 */
public interface NodeStatus
{
    /**
     * The node's status document: a {@code StatusReport} (status.proto) as {@code StatusJson} prints it, one
     * line; the same as the data port's STATUS answer.
     */
    String statusJson();

    /**
     * Whether the node's process serves: its data port open and it not closing ({@code /health/live}, {@code /health}).
     */
    boolean healthy();

    /** Whether the node should be sent traffic, and if not why ({@code /health/ready}). */
    Readiness readiness();

    /** The health document (JSON, one line): status UP or DOWN and what the node holds. */
    String healthJson();

    /** This node's busiest bucket keys per shard ({@code GET /v1/hot-keys}). */
    HotKeyReport hotKeys();

    /** This node's sampled rejected decisions ({@code GET /v1/decisions/rejected}). */
    RejectionSamples rejections();

    /**
     * {@code GET /v1/history?since=MILLIS}: the node's bounded history after {@code sinceMillis} as JSON
     * (NodeHistory), or null when it keeps none.
     */
    default String historyJson(final long sinceMillis)
    {
        return null;
    }

    /** An HTTP answer: status code and JSON body. */
    record Answer(int status, String body)
    {
    }

    /**
     * {@code GET /v1/policies/{id}/compare}: what policy {@code id}'s shadow version predicted against what was
     * enforced on this node since {@code sinceMillis} (0: as far back as kept). Status 200 with the comparison's
     * JSON, or 404 with a sentence saying why there is none (unknown policy, no shadow version in force).
     */
    default CompletableFuture<Answer> shadowComparison(final String id, final long sinceMillis)
    {
        return CompletableFuture.completedFuture(new Answer(404, "this node keeps no shadow comparisons"));
    }

    /**
     * {@code GET /region/v1/report}: what this node tells the other regions (docs/regions.md), given
     * the request's {@code Authorization} header (the region exchange's token, not the admin one).
     */
    default Answer regionReport(final String authorization)
    {
        return new Answer(404, "{\"error\":\"this node belongs to no region (start it with --region)\"}\n");
    }
}
