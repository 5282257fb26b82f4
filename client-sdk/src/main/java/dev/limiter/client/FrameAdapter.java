package dev.limiter.client;

import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.FleetCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PoliciesCodec;
import dev.limiter.protocol.ShardMap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the frames a node sends to the SDK, one whole frame per message (after the length-field
 * decoder), and hands each to its {@link Listener} as what it means, read by the message's codec.
 * A frame of another protocol version closes the channel; a message this SDK cannot read is logged
 * and dropped, and calls are unaffected. Every frame is released here.
 */
final class FrameAdapter extends ChannelInboundHandlerAdapter
{
    private static final Logger LOG = LoggerFactory.getLogger(FrameAdapter.class);

    /** What the connection does with each message. */
    interface Listener
    {
        /** A RESULT or BATCH_RESULT; {@code frame} is valid during the call only. */
        void result(ByteBuf frame, long correlationId);

        /** An ERROR; {@code code} is the raw 16-bit code (0 when the body is too short for one). */
        void error(long correlationId, int code, String message);

        /** A PONG or DEGRADED_REPORT_RESULT: a request answered with an empty body. */
        void done(long correlationId);

        void policies(PoliciesCodec.Result result);

        void shardMap(ShardMap map);

        void fleet(int instances);

        /** A HELLO_RESULT: the node's {@link dev.limiter.protocol.Features}. */
        void hello(long correlationId, long features);

        /** The peer sent what this SDK cannot read as a frame: the channel is being closed. */
        void unreadable(String why);
    }

    private final Listener listener;
    private final String peer;

    FrameAdapter(final Listener listener, final String peer)
    {
        this.listener = listener;
        this.peer = peer;
    }

    @Override
    public void channelRead(final ChannelHandlerContext ctx, final Object msg)
    {
        final ByteBuf frame = (ByteBuf)msg;
        try
        {
            if (frame.readableBytes() < Frame.HEADER_LENGTH || Frame.version(frame) != Frame.VERSION)
            {
                listener.unreadable("peer sent a frame this SDK cannot read");
                ctx.close();
                return;
            }
            dispatch(frame, Frame.type(frame), Frame.correlationId(frame));
        }
        finally
        {
            frame.release();
        }
    }

    private void dispatch(final ByteBuf frame, final int type, final long correlationId)
    {
        switch (type)
        {
            case MessageType.RESULT, MessageType.BATCH_RESULT -> listener.result(frame, correlationId);
            case MessageType.ERROR ->
            {
                final int body = Frame.bodyOffset(frame);
                final int end = Frame.frameEnd(frame);
                listener.error(correlationId, end - body >= 2 ? ErrorCodec.code(frame, body) : 0,
                    ErrorCodec.message(frame, body, end));
            }
            case MessageType.PONG, MessageType.DEGRADED_REPORT_RESULT -> listener.done(correlationId);
            case MessageType.POLICIES_RESULT ->
            {
                try
                {
                    listener.policies(PoliciesCodec.readResult(frame));
                }
                catch (final IllegalArgumentException e)
                {
                    LOG.warn("ignoring a policy set from {} this SDK cannot read: {}", peer, e.getMessage());
                }
            }
            case MessageType.SHARD_MAP_RESULT ->
            {
                try
                {
                    listener.shardMap(ShardMap.decode(frame, Frame.bodyOffset(frame), Frame.frameEnd(frame)));
                }
                catch (final IllegalArgumentException e)
                {
                    LOG.warn("ignoring a shard map from {} this SDK cannot read: {}", peer, e.getMessage());
                }
            }
            case MessageType.FLEET ->
            {
                try
                {
                    listener.fleet(FleetCodec.read(frame));
                }
                catch (final IllegalArgumentException e)
                {
                    LOG.warn("ignoring a fleet count from {} this SDK cannot read: {}", peer, e.getMessage());
                }
            }
            case MessageType.HELLO_RESULT ->
            {
                try
                {
                    listener.hello(correlationId, HelloCodec.read(frame));
                }
                catch (final IllegalArgumentException e)
                {
                    LOG.warn("ignoring a HELLO answer from {} this SDK cannot read: {}", peer, e.getMessage());
                }
            }
            default -> LOG.warn("ignoring message type {} from {}", MessageType.name(type), peer);
        }
    }
}
