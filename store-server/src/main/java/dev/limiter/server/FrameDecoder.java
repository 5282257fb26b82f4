package dev.limiter.server;

import dev.limiter.protocol.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;

import java.nio.ByteOrder;

/**
 * Splits the byte stream into frames (see {@link Frame}): emits nothing until a whole frame has
 * arrived, emits a retained slice (no copy), fails fast on a frame above the maximum size
 * ({@code TooLongFrameException}) and on a negative length ({@code CorruptedFrameException}).
 */
final class FrameDecoder extends LengthFieldBasedFrameDecoder
{
    FrameDecoder(final int maxFrameBytes)
    {
        super(maxFrameBytes, 0, Frame.LENGTH_FIELD_LENGTH, 0, 0, true);
    }

    @Override
    protected long getUnadjustedFrameLength(final ByteBuf buf, final int offset, final int length, final ByteOrder order)
    {
        // The length field is a signed int: a negative value is corruption, not a 4 GiB frame.
        return buf.getInt(offset);
    }
}
