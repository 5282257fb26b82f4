package dev.limiter.server.table;

import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;

/**
 * A copy of a {@link BucketTable}'s buckets, made by the table's owner with two memory copies (its
 * slot array and its keys) and read afterwards by one other thread, so that a snapshot stops the
 * owner only for the copy. Off-heap, freed by {@link #close()}: plan for a group's tables twice
 * over while its snapshot is written.
 */
public final class BucketTableImage implements AutoCloseable
{
    private ByteBuffer slotMemory;
    private ByteBuffer keyMemory;
    private final UnsafeBuffer slots;
    private final UnsafeBuffer keys;
    private final int slotCount;
    private final int size;

    BucketTableImage(final DirectBuffer tableSlots, final int slotCount, final DirectBuffer tableKeys, final int keyBytes, final int size)
    {
        final int slotBytes = slotCount * BucketSlots.SLOT_LENGTH;
        this.slotMemory = ByteBuffer.allocateDirect(slotBytes);
        this.keyMemory = ByteBuffer.allocateDirect(keyBytes);
        this.slots = new UnsafeBuffer(slotMemory);
        this.keys = new UnsafeBuffer(keyMemory);
        slots.putBytes(0, tableSlots, 0, slotBytes);
        keys.putBytes(0, tableKeys, 0, keyBytes);
        this.slotCount = slotCount;
        this.size = size;
    }

    /** Buckets in the image. */
    public int size()
    {
        return size;
    }

    /** Visits every bucket in slot order, as {@link BucketTable#forEach} did when the image was made. */
    public void forEach(final BucketTable.BucketVisitor visitor)
    {
        if (slotMemory == null)
        {
            throw new IllegalStateException("the image was closed");
        }
        BucketSlots.visit(slots, slotCount, keys, visitor);
    }

    /** Frees the copied memory at once (it would otherwise wait for a collection of this object). */
    @Override
    public void close()
    {
        if (slotMemory != null)
        {
            BufferUtil.free(slotMemory);
            BufferUtil.free(keyMemory);
            slotMemory = null;
            keyMemory = null;
        }
    }
}
