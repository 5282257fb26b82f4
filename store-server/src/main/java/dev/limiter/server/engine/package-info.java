/**
 * Deciding: {@link dev.limiter.server.engine.FrameRouter} resolves each entry's policy and bucket
 * key (the one writer of bucket keys) and hands the frame, as a reusable
 * {@link dev.limiter.server.engine.FrameWork}, to the {@link dev.limiter.server.engine.Shard}s that
 * own its keys; each shard is owned by one thread and decides without locks, and in a cluster its
 * {@link dev.limiter.server.engine.ShardLog} batches its decisions into the log. Answers go back
 * through a {@link dev.limiter.server.engine.FrameResponder}, so the engine never sees the network
 * layer. Hot keys and the engine's meters are here too.
 */
package dev.limiter.server.engine;
