package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

import java.nio.ByteBuffer;

/**
 * RELEASE, which gives back one concurrency lease: the one place its body is written and its
 * prefix read (the acquire batch after the prefix is {@link AcquireCodec}'s and {@link AcquireDecoder}'s).
 *
 * <pre>
 * RELEASE body: i64 lease id | u32 check | an acquire batch of one entry
 *               (the cost and descriptor of the acquire that took the lease)
 * </pre>
 * The answer is a RESULT of one RELEASED record, or an ERROR (NOT_LEADER from a node that does
 * not lead the entry's shard).
 */
public final class ReleaseCodec
{
    /** Bytes before the acquire batch: the lease id and its check. */
    public static final int PREFIX_LENGTH = 12;

    private ReleaseCodec()
    {
    }

    /** The body of a RELEASE of lease {@code leaseId}, taken for {@code cost} with a descriptor's encoded fields. */
    public static byte[] body(final long leaseId, final int check, final int cost, final byte[] encodedFields)
    {
        final ByteBuffer body = ByteBuffer.allocate(PREFIX_LENGTH + AcquireCodec.BATCH_HEADER_LENGTH + 4 + encodedFields.length);
        body.putLong(leaseId).putInt(check);
        body.putShort((short)1).putShort((short)0); // a batch of one entry, no flags
        body.putInt(cost).put(encodedFields);
        return body.array();
    }

    /** Why the RELEASE body from {@code body} to {@code bodyEnd} cannot hold its prefix, or null when it can. */
    public static String prefixProblem(final int body, final int bodyEnd)
    {
        return bodyEnd - body < PREFIX_LENGTH ?
            "RELEASE body is " + (bodyEnd - body) + " bytes; it starts with the 8-byte lease id and its 4-byte check" : null;
    }

    /** The lease id of the RELEASE body at {@code body} (its prefix checked with {@link #prefixProblem}). */
    public static long leaseId(final ByteBuf frame, final int body)
    {
        return frame.getLong(body);
    }

    /** The lease's check, after its id. */
    public static int check(final ByteBuf frame, final int body)
    {
        return frame.getInt(body + 8);
    }
}
