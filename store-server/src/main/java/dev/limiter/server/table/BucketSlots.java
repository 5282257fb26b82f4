package dev.limiter.server.table;

import org.agrona.DirectBuffer;

/**
 * The layout of a {@link BucketTable}'s slot array, shared by the table and the images a snapshot
 * is written from ({@link BucketTableImage}). A slot is 32 bytes, little-endian off-heap words:
 *
 * <pre>
 *   0  i64 hash of the key ({@link KeyHash})
 *   8  i64 the limit's state ({@link dev.limiter.protocol.Limit}: tokens, a window's count...)
 *  16  i64 the time of that state, ns
 *  24  i32 offset of the key's bytes in the key arena
 *  28  u16 ordinal of the key's policy
 *  30  u16 key length (low 9 bits; 0: an empty slot) and the key's arena chunk class (from bit 12)
 * </pre>
 */
final class BucketSlots
{
    static final int SLOT_LENGTH = 32;
    static final int HASH_OFFSET = 0;
    static final int STATE_OFFSET = 8;
    static final int TIME_OFFSET = 16;
    static final int KEY_OFFSET_OFFSET = 24;
    static final int POLICY_OFFSET = 28;
    static final int KEY_LENGTH_OFFSET = 30;
    /** The key-length field holds the length in its low bits and the key's arena chunk class above. */
    static final int KEY_LENGTH_MASK = 0x1FF;
    static final int CHUNK_CLASS_SHIFT = 12;

    private BucketSlots()
    {
    }

    /** The length of the key in the slot at {@code base}; 0 for an empty slot. */
    static int keyLength(final DirectBuffer slots, final int base)
    {
        return slots.getShort(base + KEY_LENGTH_OFFSET) & KEY_LENGTH_MASK;
    }

    /** Visits every bucket of a slot array in slot order, its key read from {@code keys}. */
    static void visit(final DirectBuffer slots, final int slotCount, final DirectBuffer keys,
        final BucketTable.BucketVisitor visitor)
    {
        for (int slot = 0; slot < slotCount; slot++)
        {
            final int base = slot * SLOT_LENGTH;
            final int length = keyLength(slots, base);
            if (length != 0)
            {
                visitor.visit(keys, slots.getInt(base + KEY_OFFSET_OFFSET), length, slots.getShort(base
                    + POLICY_OFFSET) & 0xFFFF,
                    slots.getLong(base + STATE_OFFSET), slots.getLong(base + TIME_OFFSET));
            }
        }
    }
}
