package dev.limiter.server.table;

import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Off-heap storage for bucket keys: power-of-two chunks of 16 to 256 bytes, each size class with
 * an intrusive free list (the next-free offset lives in the freed chunk itself). A key costs its
 * length rounded up to the next class. Single-threaded, like the table that owns it.
 */
final class KeyArena
{
    static final int MIN_CHUNK_SHIFT = 4;
    static final int MAX_CHUNK_SHIFT = 8;
    static final int MAX_KEY_LENGTH = 1 << MAX_CHUNK_SHIFT;
    private static final int NONE = -1;

    private final UnsafeBuffer buffer;
    private final int capacity;
    private final int[] freeHeads = new int[MAX_CHUNK_SHIFT - MIN_CHUNK_SHIFT + 1];
    private int bumpOffset;
    private long bytesInUse;

    KeyArena(final int capacityBytes)
    {
        this.capacity = capacityBytes;
        this.buffer = new UnsafeBuffer(BufferUtil.allocateDirectAligned(align(capacityBytes, 64), 64));
        java.util.Arrays.fill(freeHeads, NONE);
    }

    private static int align(final int value, final int alignment)
    {
        return (value + alignment - 1) & -alignment;
    }

    static int sizeClass(final int length)
    {
        final int shift = Math.max(MIN_CHUNK_SHIFT, 32 - Integer.numberOfLeadingZeros(Math.max(1, length) - 1));
        return shift - MIN_CHUNK_SHIFT;
    }

    static int chunkSize(final int length)
    {
        return 1 << (sizeClass(length) + MIN_CHUNK_SHIFT);
    }

    /** Copies a key in; returns its offset, or -1 when there is no room. */
    int store(final DirectBuffer key, final int keyOffset, final int length)
    {
        final int sizeClass = sizeClass(length);
        final int chunk = 1 << (sizeClass + MIN_CHUNK_SHIFT);
        int offset = freeHeads[sizeClass];
        if (offset != NONE)
        {
            freeHeads[sizeClass] = buffer.getInt(offset);
        }
        else if (bumpOffset + chunk <= capacity)
        {
            offset = bumpOffset;
            bumpOffset += chunk;
        }
        else
        {
            return NONE;
        }
        buffer.putBytes(offset, key, keyOffset, length);
        bytesInUse += chunk;
        return offset;
    }

    void free(final int offset, final int length)
    {
        final int sizeClass = sizeClass(length);
        buffer.putInt(offset, freeHeads[sizeClass]);
        freeHeads[sizeClass] = offset;
        bytesInUse -= 1 << (sizeClass + MIN_CHUNK_SHIFT);
    }

    boolean equals(final int offset, final DirectBuffer key, final int keyOffset, final int length)
    {
        int i = 0;
        for (; i + 8 <= length; i += 8)
        {
            if (buffer.getLong(offset + i) != key.getLong(keyOffset + i))
            {
                return false;
            }
        }
        for (; i < length; i++)
        {
            if (buffer.getByte(offset + i) != key.getByte(keyOffset + i))
            {
                return false;
            }
        }
        return true;
    }

    DirectBuffer buffer()
    {
        return buffer;
    }

    long bytesInUse()
    {
        return bytesInUse;
    }

    int capacity()
    {
        return capacity;
    }
}
