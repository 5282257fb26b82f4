/**
 * Replication of a node's state through the raft module: the state machine that applies
 * committed entries to the shards' tables and the policy state
 * ({@link dev.limiter.server.cluster.ReplicatedBuckets}), the DECISIONS entry's one owner
 * ({@link dev.limiter.server.cluster.DecisionsEntry}), leadership and the leader lease
 * ({@link dev.limiter.server.cluster.Replication}), snapshots and membership changes.
 */
package dev.limiter.server.cluster;
