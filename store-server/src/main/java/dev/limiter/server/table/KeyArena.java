package dev.limiter.server.table;

import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.Arrays;

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
    private int lastSizeClass;

    KeyArena(final int capacityBytes)
    {
        this.capacity = capacityBytes;
        this.buffer = new UnsafeBuffer(BufferUtil.allocateDirectAligned(align(capacityBytes, 64), 64));
        Arrays.fill(freeHeads, NONE);
        if (capacityBytes < MAX_KEY_LENGTH)
        {
            throw new IllegalArgumentException("key arena must hold at least one " + MAX_KEY_LENGTH + "-byte key");
        }
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

    /**
     * Copies a key in: a free chunk of its class, else fresh space, else a free chunk of a larger
     * class (so small keys are never refused while bigger chunks sit free). The class of the
     * chunk used is left in {@link #lastSizeClass()} for the caller to store.
     *
     * @return the key's offset, or -1 when there is no room
     */
    int store(final DirectBuffer key, final int keyOffset, final int length)
    {
        final int wanted = sizeClass(length);
        final int offset;
        final int sizeClass;
        if (freeHeads[wanted] != NONE)
        {
            sizeClass = wanted;
            offset = popFree(sizeClass);
        }
        else if (bumpOffset + (1 << (wanted + MIN_CHUNK_SHIFT)) <= capacity)
        {
            sizeClass = wanted;
            offset = bumpOffset;
            bumpOffset += 1 << (wanted + MIN_CHUNK_SHIFT);
        }
        else
        {
            int larger = wanted + 1;
            while (larger < freeHeads.length && freeHeads[larger] == NONE)
            {
                larger++;
            }
            if (larger == freeHeads.length)
            {
                return NONE;
            }
            sizeClass = larger;
            offset = popFree(sizeClass);
        }
        buffer.putBytes(offset, key, keyOffset, length);
        bytesInUse += 1 << (sizeClass + MIN_CHUNK_SHIFT);
        lastSizeClass = sizeClass;
        return offset;
    }

    private int popFree(final int sizeClass)
    {
        final int offset = freeHeads[sizeClass];
        freeHeads[sizeClass] = buffer.getInt(offset);
        return offset;
    }

    /** Size class of the chunk the last successful {@link #store} used. */
    int lastSizeClass()
    {
        return lastSizeClass;
    }

    void free(final int offset, final int sizeClass)
    {
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

    /** Bytes from the start of the buffer that hold or once held keys (every key lies below this). */
    int bytesReserved()
    {
        return bumpOffset;
    }

    /** Makes this arena an exact copy of {@code other} (same capacity): chunks, free lists, counters. */
    void copyFrom(final KeyArena other)
    {
        if (other.capacity != capacity)
        {
            throw new IllegalArgumentException("arena capacities differ: " + other.capacity + " vs " + capacity);
        }
        buffer.putBytes(0, other.buffer, 0, Math.max(other.bumpOffset, bumpOffset));
        System.arraycopy(other.freeHeads, 0, freeHeads, 0, freeHeads.length);
        bumpOffset = other.bumpOffset;
        bytesInUse = other.bytesInUse;
        lastSizeClass = other.lastSizeClass;
    }

    /** Forgets every key. */
    void clear()
    {
        Arrays.fill(freeHeads, NONE);
        bumpOffset = 0;
        bytesInUse = 0;
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
