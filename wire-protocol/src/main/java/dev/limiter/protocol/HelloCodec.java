package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * HELLO, the first frame an SDK sends on a new connection, and the node's HELLO_RESULT: each lists
 * its {@link Features}. The one place both are written and read.
 *
 * <pre>
 * HELLO body:        u64 features of the sender
 * HELLO_RESULT body: u64 features of the node, u32 its protocol generation, u32 the oldest generation it runs beside
 * </pre>
 *
 * A body longer than a reader knows is read for the fields it knows: a newer peer may append fields.
 * A HELLO_RESULT of 8 bytes comes from a node from before {@link ProtocolGeneration}s.
 */
public final class HelloCodec
{
    /** Bytes of a HELLO body this build writes. */
    public static final int BODY_LENGTH = 8;
    /** Bytes of a HELLO_RESULT body this build writes. */
    public static final int RESULT_BODY_LENGTH = 16;

    /**
     * What a node says of itself in HELLO_RESULT.
     *
     * @param features   its {@link Features}
     * @param generation its {@link ProtocolGeneration}
     * @param oldestPeer the oldest generation it runs beside
     */
    public record Greeting(long features, int generation, int oldestPeer)
    {
    }

    private HelloCodec()
    {
    }

    /** Writes a HELLO listing {@code features}. */
    public static void writeHello(final ByteBuf out, final long correlationId, final long features)
    {
        write(out, MessageType.HELLO, correlationId, features);
    }

    /** Writes the HELLO_RESULT answering HELLO {@code correlationId}, with this build's protocol generations. */
    public static void writeResult(final ByteBuf out, final long correlationId, final long features)
    {
        final int start = Frame.begin(out, MessageType.HELLO_RESULT, correlationId);
        out.writeLong(features);
        out.writeInt(ProtocolGeneration.CURRENT);
        out.writeInt(ProtocolGeneration.OLDEST_PEER);
        Frame.finish(out, start);
    }

    /**
     * What a HELLO_RESULT frame (at its reader index) says of its node; generation
     * {@link ProtocolGeneration#BEFORE_GENERATIONS} when it carries the feature bits only.
     *
     * @throws IllegalArgumentException when the body is shorter than 8 bytes, or holds part of the generations
     */
    public static Greeting readGreeting(final ByteBuf frame)
    {
        final long features = read(frame);
        final int body = Frame.bodyOffset(frame);
        final int length = Frame.frameEnd(frame) - body;
        if (length == BODY_LENGTH)
        {
            return new Greeting(features, ProtocolGeneration.BEFORE_GENERATIONS, ProtocolGeneration.BEFORE_GENERATIONS);
        }
        if (length < RESULT_BODY_LENGTH)
        {
            throw new IllegalArgumentException("HELLO_RESULT body is " + length +
                " bytes; after its u64 of feature bits " +
                "come a u32 protocol generation and a u32 oldest generation (16 bytes)");
        }
        return new Greeting(features, frame.getInt(body + BODY_LENGTH), frame.getInt(body + BODY_LENGTH + 4));
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
