/**
 * Replication over Apache Ratis: turns a node's commands into committed, ordered log entries
 * stamped with the cluster clock, and hands them to {@link dev.limiter.raft.ReplicatedStateMachine}.
 * Knows nothing about buckets or policies.
 */
package dev.limiter.raft;
