package dev.limiter.server.control;

import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.raft.NotLeaderException;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The replicated log as policy changes see it: whether this node may append, and the append. The
 * cluster package provides it, so that this package never depends on how replication works.
 */
public interface PolicyLog
{
    /** Whether this node leads now (only the leader appends). */
    boolean isLeader();

    /** The refusal a follower gives, naming the leader when it knows one. */
    NotLeaderException notLeader();

    /**
     * Appends the change; completes with the encoded {@link PolicyState.Outcome} once the entry is
     * committed and applied on this node.
     */
    CompletableFuture<ByteBuffer> append(PolicyCommand command);
}
