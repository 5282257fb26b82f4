package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * HELLO, the first frame an SDK sends on a new connection, and the node's HELLO_RESULT: each lists
 * its {@link Features}. The one place both are written and read.
 *
 * <pre>
 * HELLO body:        u64 features of the sender
 * HELLO_RESULT body: u64 features of the node
 * </pre>
 *
 * A body longer than 8 bytes is read for its first 8: a newer peer may append fields.
 */
public final class HelloCodec
{
    /** Bytes of a HELLO or HELLO_RESULT body this build writes. */
    public static final int BODY_LENGTH = 8;

    private HelloCodec()
    {
    }

    /** Writes a HELLO listing {@code features}. */
    public static void writeHello(final ByteBuf out, final long correlationId, final long features)
    {
        write(out, MessageType.HELLO, correlationId, features);
    }

    /** Writes the HELLO_RESULT answering HELLO {@code correlationId}. */
    public static void writeResult(final ByteBuf out, final long correlationId, final long features)
    {
        write(out, MessageType.HELLO_RESULT, correlationId, features);
    }

    /**
     * The features a HELLO or HELLO_RESULT frame (at its reader index) lists.
     *
     * @throws IllegalArgumentException when the body is shorter than 8 bytes
     */
    public static long read(final ByteBuf frame)
    {
        final int body = Frame.bodyOffset(frame);
        final int length = Frame.frameEnd(frame) - body;
        if (length < BODY_LENGTH)
        {
            throw new IllegalArgumentException(MessageType.name(Frame.type(frame)) + " body is " + length +
                " bytes; it starts with a u64 of feature bits");
        }
        return frame.getLong(body);
    }

    private static void write(final ByteBuf out, final int type, final long correlationId, final long features)
    {
        final int start = Frame.begin(out, type, correlationId);
        out.writeLong(features);
        Frame.finish(out, start);
    }
}
