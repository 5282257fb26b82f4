package dev.limiter.server.admin;

import java.util.List;

/**
 * What {@code GET /v1/decisions/rejected} reads: this node's sampled log of rejected decisions.
 */
public interface RejectionSamples
{
    /** One sampled rejection: its decision id, when, the policy and version that refused it, tenant, route, reason. */
    record Rejection(String id, long atMillis, String policy, long version, String tenant, String route, String reason)
    {
    }

    /** The node's name, as its answers show it. */
    String node();

    /** Rejections sampled since the node started. */
    long sampled();

    /** Rejections left out of the sample since the node started. */
    long dropped();

    /** The newest samples first, at most {@code limit}, of one policy and one tenant when given (null: any). */
    List<Rejection> newest(int limit, String policy, String tenant);

    /** The sample of one decision (a valid printed id), or null when this node never sampled it. */
    Rejection find(String decisionId);
}
