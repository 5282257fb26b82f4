package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * The frame every message travels in. All integers are big-endian.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                 length (bytes after this field)               |
 * +---------------+---------------+-------------------------------+
 * |    version    |     type      |        flags (reserved, 0)    |
 * +---------------+---------------+-------------------------------+
 * |                     correlation id (64 bits)                  |
 * |                                                               |
 * +---------------------------------------------------------------+
 * |                     body (type-specific) ...                  |
 * </pre>
 *
 * The correlation id is chosen by the requester and echoed in the response, so many requests can
 * be in flight on one connection and answered in any order. See {@code docs/protocol.md}.
 */
public final class Frame
{
    /** The protocol version this code speaks. */
    public static final int VERSION = 1;

    public static final int LENGTH_FIELD_LENGTH = 4;
    public static final int VERSION_OFFSET = 4;
    public static final int TYPE_OFFSET = 5;
    public static final int FLAGS_OFFSET = 6;
    public static final int CORRELATION_ID_OFFSET = 8;
    /** Bytes from the start of the frame to the start of the body. */
    public static final int HEADER_LENGTH = 16;
    /** The smallest legal value of the length field: a header with an empty body. */
    public static final int MIN_LENGTH_FIELD = HEADER_LENGTH - LENGTH_FIELD_LENGTH;

    /** Default largest frame (length field + everything after it) a peer accepts, in bytes. */
    public static final int DEFAULT_MAX_FRAME_BYTES = 1 << 20;

    private Frame()
    {
    }

    /**
     * Writes a header with a zero length placeholder at the writer index and returns the frame's
     * start index; call {@link #finish(ByteBuf, int)} once the body is written.
     */
    public static int begin(final ByteBuf out, final int type, final long correlationId)
    {
        final int start = out.writerIndex();
        out.writeInt(0);
        out.writeByte(VERSION);
        out.writeByte(type);
        out.writeShort(0);
        out.writeLong(correlationId);
        return start;
    }

    /** Fills in the length field of the frame that starts at {@code frameStart}. */
    public static void finish(final ByteBuf out, final int frameStart)
    {
        out.setInt(frameStart, out.writerIndex() - frameStart - LENGTH_FIELD_LENGTH);
    }

    public static int version(final ByteBuf frame)
    {
        return frame.getUnsignedByte(frame.readerIndex() + VERSION_OFFSET);
    }

    public static int type(final ByteBuf frame)
    {
        return frame.getUnsignedByte(frame.readerIndex() + TYPE_OFFSET);
    }

    public static long correlationId(final ByteBuf frame)
    {
        return frame.getLong(frame.readerIndex() + CORRELATION_ID_OFFSET);
    }

    /** Index of the first body byte of a frame whose first byte is at the reader index. */
    public static int bodyOffset(final ByteBuf frame)
    {
        return frame.readerIndex() + HEADER_LENGTH;
    }

    /** Index one past the last byte of a frame whose first byte is at the reader index. */
    public static int frameEnd(final ByteBuf frame)
    {
        return frame.readerIndex() + LENGTH_FIELD_LENGTH + frame.getInt(frame.readerIndex());
    }
}
