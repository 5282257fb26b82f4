package dev.limiter.server.table;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;

/**
 * The prefix every bucket key starts with: {@code u16 policy ordinal | u32 policy version}
 * (big-endian), so that a new version starts new buckets and a replica replays (and sweeps) a
 * bucket with the rate of the version it was made under. What follows the prefix is the scope
 * part, written by the engine's frame router.
 */
public final class BucketKeys
{
    /** Bytes of the prefix. */
    public static final int PREFIX_LENGTH = 6;

    private BucketKeys()
    {
    }

    /** Writes the prefix at {@code at}. */
    public static void putPrefix(final MutableDirectBuffer key, final int at, final int ordinal, final long version)
    {
        key.putShort(at, (short)ordinal, ByteOrder.BIG_ENDIAN);
        key.putInt(at + 2, (int)version, ByteOrder.BIG_ENDIAN);
    }

    /** The policy version the key at {@code keyOffset} was made under. */
    public static long version(final DirectBuffer key, final int keyOffset)
    {
        return key.getInt(keyOffset + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF_FFFFL;
    }
}
