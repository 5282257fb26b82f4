package dev.limiter.server.net;

import dev.limiter.server.engine.FrameResponder;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;

/**
 * What a data-port connection does with one kind of frame that is not a decision (POLICIES, SDK
 * reports, MEMBERS, STATUS, PING): each kind has an owner, and the connection dispatches to it by
 * message type. Runs on the connection's event loop; the frame is released after it returns.
 */
@FunctionalInterface
interface ControlFrame
{
    void handle(ChannelHandlerContext ctx, ByteBuf frame, long correlationId, FrameResponder answers);
}
