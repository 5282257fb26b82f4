package dev.limiter.server.table;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The storage alone, with hashes chosen by the test: probe chains that collide, wrap around the end
 * of the slot array and are cut in the middle by a delete, growth, and eviction by the owner's rule.
 */
class SlotMapTest
{
    private static final int SLOTS = 16;

    private final Set<String> evictable = new HashSet<>();

    private SlotMap map(final int maxEntries, final int initialSlots, final boolean tracksDigest)
    {
        final int maxSlots = Math.max(16,
            Integer.highestOneBit((int)Math.ceil(maxEntries / BucketTable.MAX_LOAD_FACTOR) - 1) << 1);
        return new SlotMap(maxEntries, maxSlots, initialSlots, 4096, tracksDigest,
            (m, slot, now) -> evictable.contains(keyOf(m, slot)));
    }

    private static String keyOf(final SlotMap map, final int slot)
    {
        final byte[] bytes = new byte[map.keyLength(slot)];
        map.keys().getBytes(map.keyOffset(slot), bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static UnsafeBuffer key(final String key)
    {
        return new UnsafeBuffer(key.getBytes(StandardCharsets.UTF_8));
    }

    private static boolean insert(final SlotMap map, final String key, final long hash, final long state)
    {
        final UnsafeBuffer bytes = key(key);
        return map.insert(bytes, 0, bytes.capacity(), hash, 7, state, 100, 0);
    }

    private static int find(final SlotMap map, final String key, final long hash)
    {
        final UnsafeBuffer bytes = key(key);
        return map.find(bytes, 0, bytes.capacity(), hash);
    }

    @Test
    void keysWithTheSameHashAreKeptApartByTheirBytes()
    {
        final SlotMap map = map(10, SLOTS, false);
        assertTrue(insert(map, "a", 3, 1));
        assertTrue(insert(map, "b", 3, 2));

        assertEquals(1, map.state(find(map, "a", 3)));
        assertEquals(2, map.state(find(map, "b", 3)));
        assertEquals(-1, find(map, "c", 3));
        assertEquals(7, map.policy(find(map, "b", 3)));
    }

    @Test
    void deletingFromTheMiddleOfAChainThatWrapsAroundKeepsEveryLaterKeyFindable()
    {
        final SlotMap map = map(10, SLOTS, true);
        // Homes 14, 14, 15, 14: the chain runs 14, 15, 0, 1.
        insert(map, "p", 14, 1);
        insert(map, "q", 14, 2);
        insert(map, "r", 15, 3);
        insert(map, "s", 14, 4);
        assertEquals(1, find(map, "s", 14));

        map.delete(find(map, "q", 14));

        assertEquals(-1, find(map, "q", 14));
        assertEquals(1, map.state(find(map, "p", 14)));
        assertEquals(3, map.state(find(map, "r", 15)));
        assertEquals(4, map.state(find(map, "s", 14)));
        assertEquals(3, map.size());
        assertEquals(map.digest(), map.trackedDigest());
    }

    @Test
    void growingDoublesTheSlotsAndKeepsEveryKey()
    {
        final SlotMap map = map(1000, SLOTS, true);
        for (int i = 0; i < 100; i++)
        {
            assertTrue(insert(map, "k" + i, i * 0x9E3779B97F4A7C15L, i));
        }

        assertTrue(map.slotCount() > SLOTS && map.slotCount() <= map.maxSlotCount(), "slots: " + map.slotCount());
        for (int i = 0; i < 100; i++)
        {
            assertEquals(i, map.state(find(map, "k" + i, i * 0x9E3779B97F4A7C15L)));
        }
        assertEquals(map.digest(), map.trackedDigest());
    }

    @Test
    void aFullMapEvictsWhatItsOwnerLetsGoAndRefusesWhenNothingMay()
    {
        final SlotMap map = map(4, SLOTS, false);
        for (int i = 0; i < 4; i++)
        {
            assertTrue(insert(map, "k" + i, i, i));
        }

        assertFalse(insert(map, "late", 9, 9), "nothing may go");

        evictable.add("k2");
        assertTrue(insert(map, "late", 9, 9));
        assertEquals(-1, find(map, "k2", 2));
        assertEquals(1, map.evictions());
        assertEquals(4, map.size());
    }

    @Test
    void aCopyAndAClearedMapLayOutAsNewOnes()
    {
        final SlotMap original = map(100, SLOTS, true);
        final SlotMap copy = map(100, SLOTS, true);
        for (int i = 0; i < 40; i++)
        {
            insert(original, "k" + i, i * 31L, i);
        }

        copy.copyFrom(original);
        final List<String> visited = new ArrayList<>();
        final List<String> copied = new ArrayList<>();
        original.forEach((keys, offset, length, policy, state, time) -> visited.add(offset + ":" + state));
        copy.forEach((keys, offset, length, policy, state, time) -> copied.add(offset + ":" + state));
        assertEquals(visited, copied);
        assertEquals(original.trackedDigest(), copy.trackedDigest());

        original.clear();
        assertEquals(0, original.size());
        assertEquals(SLOTS, original.slotCount());
        assertEquals(0, original.trackedDigest());
        assertEquals(0, original.digest());
    }
}
