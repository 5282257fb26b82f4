package dev.limiter.client;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * A table of at most {@code capacity} keys, for keys that callers choose (tenants, principals,
 * descriptors): however the keys churn, a new key costs a bounded amount of work and the table
 * never holds more than its capacity.
 *
 * <p>Lookups are one {@link ConcurrentHashMap} get and allocate nothing. Every key also holds one
 * of {@code capacity} slots. Once every slot is taken, a new key's place is found by a clock hand
 * that goes on from where the last new key left it and looks at up to {@link #SCAN} slots, taking
 * the first whose entry may go: one its owner says to drop ({@link KeyFate#DROP}: expired, or as
 * good as absent), or one it ages ({@link KeyFate#AGE}) that was not looked up since the hand last
 * passed (CLOCK's second chance: the hand clears the mark as it passes). Entries the owner keeps
 * ({@link KeyFate#KEEP}) are passed over. When none of them may go, the new key either takes the
 * last slot looked at anyway ({@link WhenFull#EVICT}: a cache, where any entry may be rebuilt) or is
 * not added ({@link WhenFull#REFUSE}: the caller goes on without it).
 *
 * <p>Keys are {@link Comparable} to their own class: callers can choose keys whose hashes collide,
 * and a {@link ConcurrentHashMap} bin of such keys is searched in logarithmic time instead of one
 * key after another (it orders a bin only by a class that implements {@code Comparable} of itself).
 *
 * <p>Thread-safe and lock-free: slots change by compare-and-set; with several threads adding at
 * once the table may hold one extra key per adding thread for a moment. {@link #clear} starts an
 * empty table in O(1); an add racing with it lands in the table being dropped.
 */
final class BoundedKeyTable<K extends Comparable<K>, V>
{
    /** Slots a new key's clock hand looks at, at most, when it meets no contention. */
    static final int SCAN = 16;

    /** What may happen to a held entry when a new key needs its slot. */
    enum KeyFate
    {
        /** It may go now: expired, or as good as absent. */
        DROP,
        /** It may go when not looked up since the clock hand last passed it. */
        AGE,
        /** It stays (in use). */
        KEEP
    }

    /** What a new key does when none of the slots it looked at may be taken. */
    enum WhenFull
    {
        /** It takes the last slot looked at: its entry is dropped. */
        EVICT,
        /** It is not added. */
        REFUSE
    }

    /** How the owner judges a held value when a new key needs room. */
    @FunctionalInterface
    interface Retention<V>
    {
        KeyFate verdict(V value, long nowNanos);
    }

    private static final class Entry<K, V>
    {
        final K key;
        volatile V value;
        /** Looked up since the clock hand last passed. */
        volatile boolean referenced;

        Entry(final K key, final V value)
        {
            this.key = key;
            this.value = value;
        }
    }

    /** The keys, their slots and the clock hand; {@link #clear} replaces it whole. */
    private static final class Generation<K, V>
    {
        final ConcurrentHashMap<K, Entry<K, V>> byKey = new ConcurrentHashMap<>();
        final AtomicReferenceArray<Entry<K, V>> slots;
        final AtomicLong hand = new AtomicLong();

        Generation(final int capacity)
        {
            slots = new AtomicReferenceArray<>(capacity);
        }
    }

    private final int capacity;
    private final WhenFull whenFull;
    private final Retention<V> retention;
    /** Null until the first key (an SDK that never needs the table holds no slots). */
    private final AtomicReference<Generation<K, V>> current = new AtomicReference<>();
    private final LongAdder examined = new LongAdder();
    private final LongAdder evicted = new LongAdder();
    private final LongAdder refused = new LongAdder();

    /**
     * @param capacity  keys held at most, at least 1
     * @param whenFull  what a new key does when no slot it looked at may be taken
     * @param retention what may happen to a held value (called with the new key's clock reading)
     */
    BoundedKeyTable(final int capacity, final WhenFull whenFull, final Retention<V> retention)
    {
        if (capacity < 1)
        {
            throw new IllegalArgumentException("a bounded key table holds at least 1 key, was given capacity " + capacity);
        }
        this.capacity = capacity;
        this.whenFull = Objects.requireNonNull(whenFull, "whenFull");
        this.retention = Objects.requireNonNull(retention, "retention");
    }

    /** The value held for {@code key}, or null; marks it looked up. Allocates nothing. */
    V get(final K key)
    {
        final Generation<K, V> generation = current.get();
        if (generation == null)
        {
            return null;
        }
        final Entry<K, V> entry = generation.byKey.get(key);
        if (entry == null)
        {
            return null;
        }
        touch(entry);
        return entry.value;
    }

    /**
     * The value held for {@code key}, else a new one from {@code create}, held from now on; null
     * when the table is full and {@link WhenFull#REFUSE}s it ({@code create}'s value is then dropped).
     */
    V getOrAdd(final K key, final long nowNanos, final Supplier<? extends V> create)
    {
        final Generation<K, V> generation = generation();
        final Entry<K, V> held = generation.byKey.get(key);
        if (held != null)
        {
            touch(held);
            return held.value;
        }
        final Entry<K, V> added = add(generation, new Entry<>(key, create.get()), nowNanos);
        return added == null ? null : added.value;
    }

    /** Holds {@code value} for {@code key} in place of what was held; not held when the table is full and refuses it. */
    void put(final K key, final V value, final long nowNanos)
    {
        final Generation<K, V> generation = generation();
        final Entry<K, V> held = generation.byKey.get(key);
        if (held != null)
        {
            held.value = value;
            return;
        }
        final Entry<K, V> added = add(generation, new Entry<>(key, value), nowNanos);
        if (added != null)
        {
            added.value = value; // another thread added the key meanwhile: the last put wins, as in a map
        }
    }

    /** Drops every key, in O(1): the next key starts an empty table. */
    void clear()
    {
        current.set(null);
    }

    /** Keys held now. */
    int size()
    {
        final Generation<K, V> generation = current.get();
        return generation == null ? 0 : generation.byKey.size();
    }

    int capacity()
    {
        return capacity;
    }

    /** Slots the clock hand looked at, over every new key so far (at most {@link #SCAN} per key without contention). */
    long examined()
    {
        return examined.sum();
    }

    /** Entries dropped to make room for new keys. */
    long evicted()
    {
        return evicted.sum();
    }

    /** New keys not added because the table was full ({@link WhenFull#REFUSE}). */
    long refused()
    {
        return refused.sum();
    }

    private static void touch(final Entry<?, ?> entry)
    {
        if (!entry.referenced)
        {
            entry.referenced = true; // a read first: a key looked up all the time is not written all the time
        }
    }

    private Generation<K, V> generation()
    {
        final Generation<K, V> held = current.get();
        if (held != null)
        {
            return held;
        }
        final Generation<K, V> fresh = new Generation<>(capacity);
        return current.compareAndSet(null, fresh) ? fresh : current.get();
    }

    /**
     * Gives {@code fresh} a slot, then makes it findable by its key (in that order, so that no key
     * is findable without a slot for longer than a racing eviction takes): the entry now held for
     * the key, or null when refused.
     */
    private Entry<K, V> add(final Generation<K, V> generation, final Entry<K, V> fresh, final long nowNanos)
    {
        final int slot = claim(generation, fresh, nowNanos);
        if (slot < 0)
        {
            refused.increment();
            return null;
        }
        final Entry<K, V> raced = generation.byKey.putIfAbsent(fresh.key, fresh);
        if (raced != null)
        {
            generation.slots.compareAndSet(slot, fresh, null); // the key came in meanwhile: the slot is free again
            touch(raced);
            return raced;
        }
        if (generation.slots.get(slot) != fresh)
        {
            // The hand went round the whole table and took the slot before the key was in: the entry
            // serves this call, but the table keeps its bound.
            generation.byKey.remove(fresh.key, fresh);
        }
        return fresh;
    }

    /** The slot {@code fresh} now holds, or -1 when the table is full and refuses it. */
    private int claim(final Generation<K, V> generation, final Entry<K, V> fresh, final long nowNanos)
    {
        final AtomicReferenceArray<Entry<K, V>> slots = generation.slots;
        int looked = 0;
        try
        {
            while (true)
            {
                final int i = (int)(generation.hand.getAndIncrement() % capacity);
                looked++;
                final Entry<K, V> held = slots.get(i);
                if (held == null)
                {
                    if (slots.compareAndSet(i, null, fresh))
                    {
                        return i;
                    }
                    continue;
                }
                boolean take = switch (retention.verdict(held.value, nowNanos))
                {
                    case DROP -> true;
                    case AGE -> !held.referenced;
                    case KEEP -> false;
                };
                if (!take)
                {
                    if (held.referenced)
                    {
                        held.referenced = false; // its second chance is this pass
                    }
                    if (looked >= SCAN)
                    {
                        if (whenFull == WhenFull.REFUSE)
                        {
                            return -1;
                        }
                        take = true;
                    }
                }
                if (take && slots.compareAndSet(i, held, fresh))
                {
                    generation.byKey.remove(held.key, held);
                    evicted.increment();
                    return i;
                }
            }
        }
        finally
        {
            examined.add(looked);
        }
    }
}
