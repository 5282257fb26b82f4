package dev.limiter.server.net;

import dev.limiter.protocol.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;

import java.nio.ByteOrder;

/**
 * Splits the byte stream into frames (see {@link Frame}): emits nothing until a whole frame has
 * arrived, emits a retained slice (no copy), fails fast on a frame above the maximum size
 * ({@code TooLongFrameException}) and on a negative length ({@code CorruptedFrameException}), and
 * tells the connection's {@link ConnectionGuard} when a frame is pending.
 */
public final class FrameDecoder extends LengthFieldBasedFrameDecoder
{
    /** Told when a frame begins and ends, so that a frame left unfinished closes the connection; may be null. */
    private final ConnectionGuard guard;

    public FrameDecoder(final int maxFrameBytes, final ConnectionGuard guard)
    {
        super(maxFrameBytes, 0, Frame.LENGTH_FIELD_LENGTH, 0, 0, true);
        this.guard = guard;
    }

    @Override
    protected Object decode(final ChannelHandlerContext ctx, final ByteBuf in) throws Exception
    {
        final Object frame = super.decode(ctx, in);
        if (guard != null)
        {
            if (frame != null)
            {
                guard.messageFinished();
            }
            if (in.isReadable())
            {
                guard.messageStarted(System.nanoTime());
            }
        }
        return frame;
    }

    @Override
    protected long getUnadjustedFrameLength(final ByteBuf buf, final int offset, final int length, final ByteOrder order)
    {
        // The length field is a signed int: a negative value is corruption, not a 4 GiB frame.
        return buf.getInt(offset);
    }
}
