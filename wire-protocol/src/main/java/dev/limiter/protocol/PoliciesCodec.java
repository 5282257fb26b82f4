package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * POLICIES (an SDK asks for the policy set, and may subscribe to every later one) and its answer
 * POLICIES_RESULT: the one place both are written and read.
 *
 * <pre>
 * POLICIES body:        u8 flags (bit 0: subscribe; bit 1: an instance id follows)
 *                       [u8 length, 1-255 UTF-8 bytes: the SDK instance, counted for FLEET]
 * POLICIES_RESULT body: i64 set version | the set (a protobuf PolicySet) to the frame's end
 * </pre>
 */
public final class PoliciesCodec
{
    /** Bit 0 of the request's flags: send every later set too. */
    public static final int SUBSCRIBE = 1;
    /** Bit 1: an instance id follows (needs {@link #SUBSCRIBE}). */
    public static final int WITH_INSTANCE = 2;
    /** Longest instance id, in UTF-8 bytes. */
    public static final int MAX_INSTANCE_ID_BYTES = 255;
    /** Bytes of a result body before the set: its version. */
    public static final int RESULT_PREFIX_LENGTH = 8;

    private static final String REQUEST_LAYOUT =
        "it is u8 flags (bit 0: subscribe, bit 1: an instance id follows as u8 length and 1-255 UTF-8 bytes)";

    private PoliciesCodec()
    {
    }

    /** What a POLICIES request asks for. {@code instanceId} is null when the SDK is not counted. */
    public record Request(boolean subscribe, String instanceId)
    {
    }

    /** A policy set as a node sent it. */
    public record Result(long version, byte[] set)
    {
    }

    /** Writes a POLICIES frame; {@code instanceId} (1-255 bytes, needs subscribing) may be null. */
    public static void writeRequest(final ByteBuf out, final long correlationId, final boolean subscribe, final byte[] instanceId)
    {
        if (instanceId != null && (!subscribe || instanceId.length == 0 || instanceId.length > MAX_INSTANCE_ID_BYTES))
        {
            throw new IllegalArgumentException("an instance id is 1-" + MAX_INSTANCE_ID_BYTES + " bytes and goes with a subscription, was " +
                instanceId.length + " bytes" + (subscribe ? "" : " without subscribing"));
        }
        final int start = Frame.begin(out, MessageType.POLICIES, correlationId);
        out.writeByte((subscribe ? SUBSCRIBE : 0) | (instanceId != null ? WITH_INSTANCE : 0));
        if (instanceId != null)
        {
            out.writeByte(instanceId.length);
            out.writeBytes(instanceId);
        }
        Frame.finish(out, start);
    }

    /**
     * Reads the POLICIES frame at {@code frame}'s reader index.
     *
     * @throws IllegalArgumentException naming what is wrong with the body and how it is laid out
     */
    public static Request readRequest(final ByteBuf frame)
    {
        final int body = Frame.bodyOffset(frame);
        final int length = Frame.frameEnd(frame) - body;
        final int flags = length < 1 ? 0 : frame.getUnsignedByte(body);
        final boolean subscribe = (flags & SUBSCRIBE) != 0;
        final boolean withInstance = (flags & WITH_INSTANCE) != 0;
        final int idLength = withInstance && length >= 2 ? frame.getUnsignedByte(body + 1) : 0;
        final int expected = withInstance ? 2 + idLength : 1;
        final String problem = length < 1 ? "is empty" :
            (flags & ~(SUBSCRIBE | WITH_INSTANCE)) != 0 ? "has unknown flags " + Integer.toBinaryString(flags) :
            withInstance && !subscribe ? "names an instance without subscribing (bit 1 needs bit 0)" :
            withInstance && length < 2 ? "has no instance id length" :
            withInstance && idLength == 0 ? "has an instance id of 0 bytes" :
            length != expected ? "is " + length + " bytes where its flags say " + expected : null;
        if (problem != null)
        {
            throw new IllegalArgumentException("POLICIES body " + problem + "; " + REQUEST_LAYOUT);
        }
        return new Request(subscribe, withInstance ? frame.toString(body + 2, idLength, StandardCharsets.UTF_8) : null);
    }

    /** Bytes of a POLICIES_RESULT frame carrying {@code set}. */
    public static int resultFrameLength(final byte[] set)
    {
        return Frame.HEADER_LENGTH + RESULT_PREFIX_LENGTH + set.length;
    }

    /** Writes a POLICIES_RESULT frame: the set (a serialized PolicySet) and its version. */
    public static void writeResult(final ByteBuf out, final long correlationId, final long version, final byte[] set)
    {
        final int start = Frame.begin(out, MessageType.POLICIES_RESULT, correlationId);
        out.writeLong(version);
        out.writeBytes(set);
        Frame.finish(out, start);
    }

    /**
     * Reads the POLICIES_RESULT frame at {@code frame}'s reader index (the set's bytes are copied).
     *
     * @throws IllegalArgumentException when the body is too short to hold the version
     */
    public static Result readResult(final ByteBuf frame)
    {
        final int body = Frame.bodyOffset(frame);
        final int length = Frame.frameEnd(frame) - body;
        if (length < RESULT_PREFIX_LENGTH)
        {
            throw new IllegalArgumentException("POLICIES_RESULT body is " + length + " bytes; it starts with the 8-byte set version");
        }
        final byte[] set = new byte[length - RESULT_PREFIX_LENGTH];
        frame.getBytes(body + RESULT_PREFIX_LENGTH, set);
        return new Result(frame.getLong(body), set);
    }
}
