package dev.limiter.server.table;

import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;

import static dev.limiter.server.table.BucketSlots.CHUNK_CLASS_SHIFT;
import static dev.limiter.server.table.BucketSlots.HASH_OFFSET;
import static dev.limiter.server.table.BucketSlots.KEY_LENGTH_MASK;
import static dev.limiter.server.table.BucketSlots.KEY_LENGTH_OFFSET;
import static dev.limiter.server.table.BucketSlots.KEY_OFFSET_OFFSET;
import static dev.limiter.server.table.BucketSlots.POLICY_OFFSET;
import static dev.limiter.server.table.BucketSlots.SLOT_LENGTH;
import static dev.limiter.server.table.BucketSlots.STATE_OFFSET;
import static dev.limiter.server.table.BucketSlots.TIME_OFFSET;

/**
 * The storage under a {@link BucketTable}: keys in off-heap, fixed-stride slots ({@link BucketSlots})
 * with open addressing (linear probing) on a 64-bit key hash and full key comparison, the key bytes
 * in a {@link KeyArena}. It finds, inserts, deletes (shifting the probe chain back: no tombstones),
 * evicts what its owner calls evictable, grows, copies and digests; what a slot's state means is the
 * table's business.
 * <p>
 * Eviction is a cursor sweep driven by inserts: an insert into a full map examines up to 1024 slots
 * from where the last sweep stopped, and every insert into a map over 7/8 full examines 16, so
 * evictable entries are cleared steadily rather than all at once. Growth doubles the slot array
 * whenever the next insert would pass {@link BucketTable#MAX_LOAD_FACTOR} and re-inserts every entry
 * in slot order, so the same operations give the same layout on every replica. Owner thread only.
 */
final class SlotMap
{
    /** Decides whether the entry in a slot may go (for a bucket: it has refilled to full). */
    @FunctionalInterface
    interface Eviction
    {
        boolean evictable(SlotMap map, int slot, long nowNanos);
    }

    /** Slots examined by the sweep of an insert that finds the map full, before it refuses. */
    private static final int SWEEP_SLOTS = 1024;
    /** Slots examined by every insert once the map is 7/8 full, so evictable entries rarely pile up. */
    private static final int BACKGROUND_SWEEP_SLOTS = 16;
    private static final int CACHE_LINE = 64;

    private final UnsafeBuffer slots = new UnsafeBuffer(0, 0);
    private ByteBuffer slotMemory;
    private int slotCount;
    private int mask;
    private int growAt;
    private final int initialSlotCount;
    private final int maxSlotCount;
    private final int maxEntries;
    private final KeyArena arena;
    private final Eviction eviction;
    private final boolean tracksDigest;
    private int size;
    private int sweepCursor;
    private long evictions;
    /** Sum of every entry's {@link #contribution}: equals {@link #digest()} when tracked. */
    private long trackedDigest;

    SlotMap(final int maxEntries, final int maxSlotCount, final int initialSlotCount, final int keyArenaBytes,
        final boolean tracksDigest, final Eviction eviction)
    {
        this.maxEntries = maxEntries;
        this.maxSlotCount = maxSlotCount;
        this.initialSlotCount = Math.min(initialSlotCount, maxSlotCount);
        this.arena = new KeyArena(keyArenaBytes);
        this.tracksDigest = tracksDigest;
        this.eviction = eviction;
        allocateSlots(this.initialSlotCount);
    }

    private void allocateSlots(final int count)
    {
        final ByteBuffer previous = slotMemory;
        // Allocated by us (not as an aligned slice) so that growth can free it at once.
        final int bytes = Math.toIntExact((long)count * SLOT_LENGTH);
        slotMemory = ByteBuffer.allocateDirect(bytes + CACHE_LINE);
        final int misalignment = (int)(BufferUtil.address(slotMemory) & (CACHE_LINE - 1));
        slots.wrap(slotMemory, misalignment == 0 ? 0 : CACHE_LINE - misalignment, bytes);
        slotCount = count;
        mask = count - 1;
        growAt = count == maxSlotCount ? Integer.MAX_VALUE : (int)(count * BucketTable.MAX_LOAD_FACTOR);
        if (previous != null)
        {
            BufferUtil.free(previous);
        }
    }

    /** Doubles the slot array and re-inserts every entry, visiting the old slots in order. */
    private void grow()
    {
        final ByteBuffer oldMemory = slotMemory;
        final UnsafeBuffer old = new UnsafeBuffer(slots.addressOffset(), slots.capacity());
        final int oldCount = slotCount;
        slotMemory = null; // keep the old memory alive until the copy is done
        allocateSlots(oldCount << 1);
        for (int from = 0; from < oldCount; from++)
        {
            final int fromBase = from * SLOT_LENGTH;
            if ((old.getShort(fromBase + KEY_LENGTH_OFFSET) & 0xFFFF) != 0)
            {
                final int slot = emptySlotFor(old.getLong(fromBase + HASH_OFFSET));
                slots.putBytes(slot * SLOT_LENGTH, old, fromBase, SLOT_LENGTH);
            }
        }
        sweepCursor = 0;
        BufferUtil.free(oldMemory);
    }

    private int emptySlotFor(final long hash)
    {
        int slot = (int)hash & mask;
        while ((slots.getShort(slot * SLOT_LENGTH + KEY_LENGTH_OFFSET) & 0xFFFF) != 0)
        {
            slot = (slot + 1) & mask;
        }
        return slot;
    }

    /** Slot index holding the key, or -1. */
    int find(final DirectBuffer key, final int keyOffset, final int keyLength, final long hash)
    {
        int slot = (int)hash & mask;
        while (true)
        {
            final int base = slot * SLOT_LENGTH;
            final int length = slots.getShort(base + KEY_LENGTH_OFFSET) & KEY_LENGTH_MASK;
            if (length == 0)
            {
                return -1;
            }
            if (length == keyLength && slots.getLong(base + HASH_OFFSET) == hash &&
                arena.equals(slots.getInt(base + KEY_OFFSET_OFFSET), key, keyOffset, keyLength))
            {
                return slot;
            }
            slot = (slot + 1) & mask;
        }
    }

    /**
     * Stores a key not held yet, sweeping for room first when the map or its arena is (nearly) full.
     *
     * @return false when there is no room even after the sweep
     */
    boolean insert(
        final DirectBuffer key, final int keyOffset, final int keyLength, final long hash, final int policy,
        final long state, final long time, final long nowNanos)
    {
        if (keyLength < 1 || keyLength > KeyArena.MAX_KEY_LENGTH)
        {
            throw new IllegalArgumentException("key length " + keyLength + " outside [1, "
                + KeyArena.MAX_KEY_LENGTH + "]");
        }
        if (size >= maxEntries)
        {
            sweep(nowNanos, SWEEP_SLOTS);
            if (size >= maxEntries)
            {
                return false;
            }
        }
        else if (size >= maxEntries - (maxEntries >> 3))
        {
            sweep(nowNanos, BACKGROUND_SWEEP_SLOTS);
        }
        if (size >= growAt)
        {
            grow();
        }
        int keyAt = arena.store(key, keyOffset, keyLength);
        if (keyAt < 0)
        {
            sweep(nowNanos, SWEEP_SLOTS);
            keyAt = arena.store(key, keyOffset, keyLength);
            if (keyAt < 0)
            {
                return false;
            }
        }
        // Sweeps may have shifted chains: probe again for the first empty slot.
        final int base = emptySlotFor(hash) * SLOT_LENGTH;
        slots.putLong(base + HASH_OFFSET, hash);
        slots.putLong(base + STATE_OFFSET, state);
        slots.putLong(base + TIME_OFFSET, time);
        slots.putInt(base + KEY_OFFSET_OFFSET, keyAt);
        slots.putShort(base + POLICY_OFFSET, (short)policy);
        slots.putShort(base + KEY_LENGTH_OFFSET, (short)(keyLength | arena.lastSizeClass() << CHUNK_CLASS_SHIFT));
        size++;
        if (tracksDigest)
        {
            trackedDigest += contribution(base);
        }
        return true;
    }

    /** Writes the state and time of the entry in {@code slot}, keeping the digest current when it is tracked. */
    void write(final int slot, final long state, final long time)
    {
        final int base = slot * SLOT_LENGTH;
        if (tracksDigest)
        {
            trackedDigest -= contribution(base);
        }
        slots.putLong(base + STATE_OFFSET, state);
        slots.putLong(base + TIME_OFFSET, time);
        if (tracksDigest)
        {
            trackedDigest += contribution(base);
        }
    }

    long state(final int slot)
    {
        return slots.getLong(slot * SLOT_LENGTH + STATE_OFFSET);
    }

    long time(final int slot)
    {
        return slots.getLong(slot * SLOT_LENGTH + TIME_OFFSET);
    }

    int policy(final int slot)
    {
        return slots.getShort(slot * SLOT_LENGTH + POLICY_OFFSET) & 0xFFFF;
    }

    /** Offset of the slot's key in {@link #keys()}. */
    int keyOffset(final int slot)
    {
        return slots.getInt(slot * SLOT_LENGTH + KEY_OFFSET_OFFSET);
    }

    int keyLength(final int slot)
    {
        return slots.getShort(slot * SLOT_LENGTH + KEY_LENGTH_OFFSET) & KEY_LENGTH_MASK;
    }

    /** The key arena's bytes (read only). */
    DirectBuffer keys()
    {
        return arena.buffer();
    }

    /**
     * Evicts entries the {@link Eviction} lets go at {@code nowNanos}, examining up to {@code limit}
     * slots from where the previous sweep stopped. Deterministic: the same operations at the same
     * times evict the same entries.
     *
     * @return entries evicted
     */
    int sweep(final long nowNanos, final int limit)
    {
        int evicted = 0;
        int examined = 0;
        int slot = sweepCursor;
        final int max = Math.min(limit, slotCount);
        while (examined < max)
        {
            if (keyLength(slot) != 0 && eviction.evictable(this, slot, nowNanos))
            {
                delete(slot);
                evicted++;
                examined++;
                continue; // a later entry may have shifted into this slot
            }
            slot = (slot + 1) & mask;
            examined++;
        }
        sweepCursor = slot;
        evictions += evicted;
        return evicted;
    }

    /** Removes the entry in a slot and shifts the rest of its probe chain back. */
    void delete(final int slotToDelete)
    {
        int hole = slotToDelete;
        final int holeBase = hole * SLOT_LENGTH;
        if (tracksDigest)
        {
            trackedDigest -= contribution(holeBase);
        }
        arena.free(slots.getInt(holeBase + KEY_OFFSET_OFFSET), (slots.getShort(holeBase
            + KEY_LENGTH_OFFSET) & 0xFFFF) >>> CHUNK_CLASS_SHIFT);
        size--;
        int slot = (hole + 1) & mask;
        while (true)
        {
            final int base = slot * SLOT_LENGTH;
            if ((slots.getShort(base + KEY_LENGTH_OFFSET) & 0xFFFF) == 0)
            {
                break;
            }
            final int home = (int)slots.getLong(base + HASH_OFFSET) & mask;
            // Move the entry back into the hole unless its home lies cyclically in (hole, slot].
            final boolean homeBetween = hole <= slot ? (home > hole && home <= slot) : (home > hole || home <= slot);
            if (!homeBetween)
            {
                slots.putBytes(hole * SLOT_LENGTH, slots, base, SLOT_LENGTH);
                hole = slot;
            }
            slot = (slot + 1) & mask;
        }
        slots.setMemory(hole * SLOT_LENGTH, SLOT_LENGTH, (byte)0);
    }

    /**
     * The key offset in the home slot of {@code hash} when that slot holds this very hash, else -1 (changes nothing).
     */
    int homeKeyOffset(final long hash)
    {
        final int base = ((int)hash & mask) * SLOT_LENGTH;
        return slots.getLong(base + HASH_OFFSET) == hash ? slots.getInt(base + KEY_OFFSET_OFFSET) : -1;
    }

    /** A digest of the content (keys, policies, states, times), independent of slot layout. */
    long digest()
    {
        long sum = 0;
        for (int slot = 0; slot < slotCount; slot++)
        {
            final int base = slot * SLOT_LENGTH;
            if ((slots.getShort(base + KEY_LENGTH_OFFSET) & KEY_LENGTH_MASK) != 0)
            {
                sum += contribution(base);
            }
        }
        return sum;
    }

    /** One entry's part of the digest (the key enters through its stored hash). */
    private long contribution(final int base)
    {
        return KeyHash.mix(slots.getLong(base + HASH_OFFSET) ^
            KeyHash.mix(slots.getLong(base + STATE_OFFSET) * 31 + slots.getLong(base + TIME_OFFSET)) ^
            (slots.getShort(base + POLICY_OFFSET) & 0xFFFF));
    }

    boolean tracksDigest()
    {
        return tracksDigest;
    }

    long trackedDigest()
    {
        return trackedDigest;
    }

    /** Makes this map an exact copy of {@code other} (same sizes): slot for slot, so both evolve identically. */
    void copyFrom(final SlotMap other)
    {
        if (other.maxSlotCount != maxSlotCount || other.maxEntries != maxEntries)
        {
            throw new IllegalArgumentException("tables differ in size");
        }
        if (other.slotCount != slotCount)
        {
            allocateSlots(other.slotCount);
        }
        slots.putBytes(0, other.slots, 0, slotCount * SLOT_LENGTH);
        arena.copyFrom(other.arena);
        size = other.size;
        sweepCursor = other.sweepCursor;
        evictions = other.evictions;
        if (tracksDigest)
        {
            trackedDigest = other.tracksDigest ? other.trackedDigest : digest();
        }
    }

    /** Forgets every entry and returns to the initial slot count, so what follows lays out as in a new map. */
    void clear()
    {
        if (slotCount != initialSlotCount)
        {
            allocateSlots(initialSlotCount);
        }
        else
        {
            slots.setMemory(0, slotCount * SLOT_LENGTH, (byte)0);
        }
        arena.clear();
        size = 0;
        sweepCursor = 0;
        trackedDigest = 0;
    }

    void forEach(final BucketTable.BucketVisitor visitor)
    {
        BucketSlots.visit(slots, slotCount, arena.buffer(), visitor);
    }

    BucketTableImage image()
    {
        return new BucketTableImage(slots, slotCount, arena.buffer(), arena.bytesReserved(), size);
    }

    int size()
    {
        return size;
    }

    int slotCount()
    {
        return slotCount;
    }

    int maxSlotCount()
    {
        return maxSlotCount;
    }

    int maxEntries()
    {
        return maxEntries;
    }

    long evictions()
    {
        return evictions;
    }

    /** Off-heap bytes allocated for slots and keys now. */
    long reservedBytes()
    {
        return (long)slotCount * SLOT_LENGTH + arena.capacity();
    }

    /** Off-heap bytes reserved for the keys. */
    long keyCapacity()
    {
        return arena.capacity();
    }

    long keyBytesInUse()
    {
        return arena.bytesInUse();
    }
}
