package dev.limiter.server.admin;

import dev.limiter.protocol.policy.HotKeyReport;

/** What the admin port reports of its node: {@code GET /status}, {@code GET /health}, {@code GET /v1/hot-keys}. */
public interface NodeStatus
{
    /** The node's status document (JSON), the same as the data port's STATUS answer. */
    String statusJson();

    /** Whether the node can serve (a member with its shards running). */
    boolean healthy();

    /** The health document (JSON, one line): status UP or DOWN and what the node holds. */
    String healthJson();

    /** This node's busiest bucket keys per shard ({@code GET /v1/hot-keys}). */
    HotKeyReport hotKeys();
}
