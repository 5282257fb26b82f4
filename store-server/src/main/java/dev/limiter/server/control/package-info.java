/**
 * The control plane's replicated state: policy versions, rollout and rollback, exemptions, the
 * audit trail and SDK reports ({@link dev.limiter.server.control.PolicyState}), and where admin
 * changes enter ({@link dev.limiter.server.control.PolicyControl}: checked on a copy, then appended
 * through a {@link dev.limiter.server.control.PolicyLog}, which the cluster package provides).
 */
package dev.limiter.server.control;
