package dev.limiter.server.table;

import dev.limiter.protocol.ShardMap;
import org.agrona.DirectBuffer;

import java.nio.ByteOrder;

/**
 * A 64-bit hash of key bytes: eight bytes at a time with a multiply-rotate step and the
 * murmur3 finaliser. Deterministic (same bytes, same hash on every node and JVM), allocation free.
 */
public final class KeyHash
{
    private static final long P1 = 0x9E3779B97F4A7C15L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;

    private KeyHash()
    {
    }

    public static long hash(final DirectBuffer buffer, final int offset, final int length)
    {
        long h = P2 ^ (length * P1);
        int i = 0;
        for (; i + 8 <= length; i += 8)
        {
            h = Long.rotateLeft(h ^ (buffer.getLong(offset + i, ByteOrder.LITTLE_ENDIAN) * P1), 31) * P2;
        }
        long tail = 0;
        for (int shift = 0; i < length; i++, shift += 8)
        {
            tail |= (buffer.getByte(offset + i) & 0xFFL) << shift;
        }
        h = Long.rotateLeft(h ^ (tail * P1), 31) * P2;
        return mix(h);
    }

    /** murmur3 fmix64: the same finaliser clients hash with ({@link ShardMap#mix}), so their placement matches. */
    public static long mix(final long value)
    {
        return ShardMap.mix(value);
    }
}
