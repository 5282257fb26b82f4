package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;

import java.nio.charset.StandardCharsets;

/**
 * Body of an ERROR frame: {@code u16 code | u16 len | message (UTF-8, at most 1024 bytes)}.
 * The correlation id is the failed request's, or 0 when it could not be read.
 */
public final class ErrorCodec
{
    public static final int MAX_MESSAGE_BYTES = 1024;

    private ErrorCodec()
    {
    }

    /** Appends a whole ERROR frame. Long messages are cut at a character boundary. */
    public static void encode(final ByteBuf out, final long correlationId, final ErrorCode code, final String message)
    {
        final int start = Frame.begin(out, MessageType.ERROR, correlationId);
        out.writeShort(code.code());
        final int lengthIndex = out.writerIndex();
        out.writeShort(0);
        String text = message == null ? "" : message;
        while (ByteBufUtil.utf8Bytes(text) > MAX_MESSAGE_BYTES)
        {
            text = text.substring(0, text.length() - Math.max(1, text.length() / 8));
        }
        final int written = out.writeCharSequence(text, StandardCharsets.UTF_8);
        out.setShort(lengthIndex, written);
        Frame.finish(out, start);
    }

    public static int code(final ByteBuf buf, final int bodyOffset)
    {
        return buf.getUnsignedShort(bodyOffset);
    }

    /**
     * @return the message, or a description of why the body is malformed
     */
    public static String message(final ByteBuf buf, final int bodyOffset, final int bodyEnd)
    {
        if (bodyEnd - bodyOffset < 4)
        {
            return "(malformed error body)";
        }
        final int length = buf.getUnsignedShort(bodyOffset + 2);
        if (bodyOffset + 4 + length > bodyEnd)
        {
            return "(malformed error body)";
        }
        return buf.toString(bodyOffset + 4, length, StandardCharsets.UTF_8);
    }
}
