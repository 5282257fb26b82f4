package dev.limiter.server.engine;

import dev.limiter.protocol.ErrorCode;
import io.netty.channel.ChannelHandlerContext;

/**
 * The connection a decision frame came from, as the engine answers it. Every call is made on that
 * connection's event loop.
 */
public interface FrameResponder
{
    /** Answers the frame with an ERROR (bad input, or the node could not decide it). */
    void error(ChannelHandlerContext ctx, long correlationId, ErrorCode code, String message);

    /**
     * Answers NOT_LEADER: this node may not decide now.
     *
     * @param shard the shard that refused (the hint names the leader of its Raft group), or -1
     *              for the control group's leader
     */
    void notLeader(ChannelHandlerContext ctx, long correlationId, int shard);

    /** The frame is being decided (before any shard has it): the connection may pause reading. */
    void frameAccepted(ChannelHandlerContext ctx);

    /**
     * Whether the peer listed {@link dev.limiter.protocol.Features#DECISION_IDS} in its HELLO (answers then name
     * their decisions).
     */
    boolean wantsDecisionIds();

    /** The frame's answer was written (or dropped). */
    void frameCompleted(ChannelHandlerContext ctx);
}
