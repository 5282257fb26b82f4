package dev.limiter.client;

import dev.limiter.client.BoundedKeyTable.KeyFate;
import dev.limiter.client.BoundedKeyTable.WhenFull;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The table callers' keys go into: never more than its capacity, and a bounded number of slots
 * looked at per new key, whatever the keys; what its owner keeps stays, what was looked up lately
 * gets a second chance, and a refusing table adds nothing rather than drop what is kept.
 */
class BoundedKeyTableTest
{
    /** A value its owner judges by a field the test sets. */
    private static final class Value
    {
        volatile KeyFate verdict = KeyFate.AGE;
    }

    private static BoundedKeyTable<String, Value> table(final int capacity, final WhenFull whenFull)
    {
        return new BoundedKeyTable<>(capacity, whenFull, (value, now) -> value.verdict);
    }

    @Test
    void twoHundredThousandNewKeysInATightLoopNeverExceedTheCapacityAndEachLooksAtMostScanSlots()
    {
        final BoundedKeyTable<String, Value> table = table(10_000, WhenFull.EVICT);
        long maxExamined = 0;
        for (int i = 0; i < 200_000; i++)
        {
            final long before = table.examined();
            table.getOrAdd("key-" + i, i, Value::new);
            maxExamined = Math.max(maxExamined, table.examined() - before);
            assertTrue(table.size() <= 10_000, "after key " + i + ": " + table.size() + " keys held");
        }
        assertEquals(10_000, table.size());
        assertTrue(maxExamined <= BoundedKeyTable.SCAN, "slots looked at for one new key: " + maxExamined);
        assertEquals(190_000, table.evicted(), "each key past the capacity took one key's place");
    }

    @Test
    void aKeyLookedUpBetweenNewKeysSurvivesAnyChurnAndUnusedKeysGoFirst()
    {
        final BoundedKeyTable<String, Value> table = table(1_000, WhenFull.EVICT);
        final Value hot = table.getOrAdd("hot", 0, Value::new);
        for (int i = 0; i < 200_000; i++)
        {
            table.getOrAdd("key-" + i, i, Value::new);
            if (i % 100 == 0)
            {
                assertSame(hot, table.get("hot"), "the hot key is still held after " + i + " new keys");
            }
        }
    }

    @Test
    void keptEntriesStayAndARefusingTableAddsNothingOnceEveryOneLookedAtIsKept()
    {
        final BoundedKeyTable<String, Value> table = table(100, WhenFull.REFUSE);
        final List<Value> kept = new ArrayList<>();
        for (int i = 0; i < 100; i++)
        {
            final Value value = table.getOrAdd("kept-" + i, 0, Value::new);
            value.verdict = KeyFate.KEEP;
            kept.add(value);
        }
        for (int i = 0; i < 10_000; i++)
        {
            final long before = table.examined();
            assertNull(table.getOrAdd("new-" + i, 0, Value::new), "full of kept keys: nothing added");
            assertTrue(table.examined() - before <= BoundedKeyTable.SCAN);
        }
        assertEquals(10_000, table.refused());
        for (int i = 0; i < 100; i++)
        {
            assertSame(kept.get(i), table.get("kept-" + i));
        }
        // One that its owner lets go makes room for one new key, once the hand reaches it (within a turn of the table).
        kept.get(42).verdict = KeyFate.DROP;
        Value added = null;
        for (int tries = 1; added == null; tries++)
        {
            assertTrue(tries <= 100 / BoundedKeyTable.SCAN + 1, "the hand went round the table without finding the free slot");
            added = table.getOrAdd("new", 0, Value::new);
        }
        assertSame(added, table.get("new"));
        assertNull(table.get("kept-42"));
        assertEquals(100, table.size());
    }

    @Test
    void aKeyItsOwnerDropsGoesEvenWhenLookedUpLately()
    {
        final BoundedKeyTable<String, Value> table = table(2, WhenFull.REFUSE);
        final Value expired = table.getOrAdd("expired", 0, Value::new);
        table.getOrAdd("kept", 0, Value::new).verdict = KeyFate.KEEP;
        expired.verdict = KeyFate.DROP;
        table.get("expired");
        table.getOrAdd("new", 0, Value::new);
        assertNull(table.get("expired"));
        assertEquals(2, table.size());
    }

    @Test
    void putReplacesTheValueOfAKeyHeldAndGetOrAddReturnsWhatIsHeld()
    {
        final BoundedKeyTable<String, Value> table = table(10, WhenFull.EVICT);
        final Value first = new Value();
        final Value second = new Value();
        table.put("k", first, 0);
        table.put("k", second, 0);
        assertSame(second, table.get("k"));
        assertSame(second, table.getOrAdd("k", 0, Value::new));
        assertEquals(1, table.size());
    }

    @Test
    void clearDropsEveryKey()
    {
        final BoundedKeyTable<String, Value> table = table(10, WhenFull.EVICT);
        for (int i = 0; i < 10; i++)
        {
            table.getOrAdd("k" + i, 0, Value::new);
        }
        table.clear();
        assertEquals(0, table.size());
        assertNull(table.get("k1"));
        table.getOrAdd("k1", 0, Value::new);
        assertEquals(1, table.size());
    }

    @Test
    void aCapacityBelowOneIsRefusedWithWhatToChange()
    {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> table(0, WhenFull.EVICT));
        assertTrue(e.getMessage().contains("at least 1"), e.getMessage());
    }

    @Test
    void threadsAddingAtOnceLeaveNoMoreKeysThanTheCapacity() throws Exception
    {
        final int threads = 4;
        final BoundedKeyTable<String, Value> table = table(1_000, WhenFull.EVICT);
        final CountDownLatch start = new CountDownLatch(1);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final AtomicInteger overCapacity = new AtomicInteger();
        final List<Thread> adders = new ArrayList<>();
        for (int t = 0; t < threads; t++)
        {
            final int id = t;
            final Thread adder = new Thread(() ->
            {
                try
                {
                    start.await();
                    for (int i = 0; i < 50_000; i++)
                    {
                        // Half the keys are shared between threads, so that adds of one key race.
                        final String key = (i % 2 == 0 ? "shared-" : "own-" + id + "-") + i;
                        final Value value = table.getOrAdd(key, i, Value::new);
                        if (value == null)
                        {
                            throw new AssertionError("an evicting table always adds");
                        }
                        if (table.size() > 1_000 + threads)
                        {
                            overCapacity.incrementAndGet();
                        }
                    }
                }
                catch (final Throwable e)
                {
                    failure.compareAndSet(null, e);
                }
            });
            adder.start();
            adders.add(adder);
        }
        start.countDown();
        for (final Thread adder : adders)
        {
            adder.join(TimeUnit.SECONDS.toMillis(30));
            assertTrue(!adder.isAlive(), "an adder did not finish in 30 s");
        }
        assertNull(failure.get());
        assertEquals(0, overCapacity.get(), "never more than the capacity plus one key per adding thread");
        assertTrue(table.size() <= 1_000, "at rest at most the capacity: " + table.size());
    }

    /** A key whose hash is the same for all, counting how often the table compares it. */
    private static final class Colliding implements Comparable<Colliding>
    {
        static long comparisons;
        final int id;

        Colliding(final int id)
        {
            this.id = id;
        }

        @Override
        public int compareTo(final Colliding other)
        {
            comparisons++;
            return Integer.compare(id, other.id);
        }

        @Override
        public boolean equals(final Object o)
        {
            comparisons++;
            return o instanceof Colliding && ((Colliding)o).id == id;
        }

        @Override
        public int hashCode()
        {
            return 42;
        }
    }

    @Test
    void keysWhoseHashesAllCollideCostALogarithmicNumberOfComparisonsEach()
    {
        final int keys = 20_000;
        final BoundedKeyTable<Colliding, Value> table = new BoundedKeyTable<>(keys, WhenFull.EVICT, (value, now) -> value.verdict);
        for (int i = 0; i < keys; i++)
        {
            table.getOrAdd(new Colliding(i), 0, Value::new);
        }
        Colliding.comparisons = 0;
        for (int i = 0; i < keys; i++)
        {
            table.get(new Colliding(keys - 1 - i));
        }
        // One after another would be 10,000 a lookup on average; a tree of 20,000 is 15 deep.
        final long perLookup = Colliding.comparisons / keys;
        assertTrue(perLookup <= 4 * 15, "comparisons per lookup among " + keys + " colliding keys: " + perLookup);
    }
}
