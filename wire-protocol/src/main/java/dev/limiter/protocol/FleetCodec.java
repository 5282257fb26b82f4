package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * FLEET, which a node pushes to subscribed SDKs: how many distinct SDK instances are subscribed to
 * it, so that fleet-wide emergency budgets can be split. The one place it is written and read.
 *
 * <pre>
 * FLEET body: i32 instances (0 or more)
 * </pre>
 */
public final class FleetCodec
{
    /** Bytes of a FLEET frame. */
    public static final int FRAME_LENGTH = Frame.HEADER_LENGTH + 4;

    private FleetCodec()
    {
    }

    /** Writes a FLEET frame (correlation id 0: nobody asked). */
    public static void write(final ByteBuf out, final int instances)
    {
        if (instances < 0)
        {
            throw new IllegalArgumentException("instances must be 0 or more, was " + instances);
        }
        final int start = Frame.begin(out, MessageType.FLEET, 0);
        out.writeInt(instances);
        Frame.finish(out, start);
    }

    /**
     * Reads the FLEET frame at {@code frame}'s reader index.
     *
     * @throws IllegalArgumentException when the body is not one i32 of 0 or more
     */
    public static int read(final ByteBuf frame)
    {
        final int body = Frame.bodyOffset(frame);
        final int length = Frame.frameEnd(frame) - body;
        if (length != 4)
        {
            throw new IllegalArgumentException("FLEET body is " + length + " bytes; it is one i32, the count of SDK instances");
        }
        final int instances = frame.getInt(body);
        if (instances < 0)
        {
            throw new IllegalArgumentException("FLEET counts " + instances + " SDK instances; a count is 0 or more");
        }
        return instances;
    }
}
