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

    /** Answers NOT_LEADER: this node may not decide now. */
    void notLeader(ChannelHandlerContext ctx, long correlationId);

    /** The frame is being decided (before any shard has it): the connection may pause reading. */
    void frameAccepted(ChannelHandlerContext ctx);

    /** The frame's answer was written (or dropped). */
    void frameCompleted(ChannelHandlerContext ctx);
}
