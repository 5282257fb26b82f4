package dev.limiter.server.table;

import dev.limiter.protocol.Admission;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.Verdict;
import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntFunction;

import static dev.limiter.server.table.BucketSlots.CHUNK_CLASS_SHIFT;
import static dev.limiter.server.table.BucketSlots.HASH_OFFSET;
import static dev.limiter.server.table.BucketSlots.KEY_LENGTH_MASK;
import static dev.limiter.server.table.BucketSlots.KEY_LENGTH_OFFSET;
import static dev.limiter.server.table.BucketSlots.KEY_OFFSET_OFFSET;
import static dev.limiter.server.table.BucketSlots.POLICY_OFFSET;
import static dev.limiter.server.table.BucketSlots.STATE_OFFSET;
import static dev.limiter.server.table.BucketSlots.TIME_OFFSET;

/**
 * One shard's token buckets: off-heap, fixed-stride slots with open addressing (linear probing)
 * on a 64-bit key hash and full key comparison, so a hash collision can never merge two buckets.
 * Owned by exactly one thread: nothing here is synchronised and the decision path allocates
 * nothing.
 *
 * <pre>
 * slot (32 bytes): i64 key hash | i64 state (its limit's, see Limit: a bucket's units) | i64 last update (ns)
 *                  | i32 key offset in the arena | u16 policy ordinal
 *                  | u16 key length (bits 0-8; 0 = empty) and arena chunk class (bits 12-14)
 * </pre>
 *
 * A full bucket is the same as an absent one, so full buckets are never stored and idle buckets
 * that have refilled are evicted deterministically (a cursor sweep, driven by inserts) when the
 * table or its key arena runs out of room: an insert into a full table examines up to 1024 slots
 * from where the last sweep stopped, and every insert into a table over 7/8 full examines 16, so
 * refilled buckets are cleared steadily rather than all at once. Deletion shifts the probe chain
 * back: no tombstones.
 * <p>
 * The slot array starts small ({@link #INITIAL_SLOTS}) and doubles whenever the next insert would
 * pass {@link #MAX_LOAD_FACTOR}, up to the slot count {@code maxBuckets} needs: a shard holding ten
 * thousand buckets then touches half a megabyte of slots rather than the full reservation, so its
 * lookups stay in the CPU caches and TLB. Growth re-inserts every bucket in slot order, so the same
 * operations give the same layout on every replica.
 * <p>
 * Other threads never read the slots or the arena (growth frees the old slot memory at once):
 * what they may know of a table is what its owner last {@link #publish() published}
 * ({@link #publishedSize()}, {@link #publishedDigest()} and the like). A table built with
 * {@code tracksDigest} keeps its content digest up to date on every change, so publishing it costs
 * nothing (the committed tables of a cluster do; the deciding ones need not).
 * <p>
 * The slot layout is {@link BucketSlots}'s; the admission rule is {@link Admission}'s. This class
 * stores: it finds, inserts, evicts, grows and keeps the digest, all on the same off-heap words.
 */
public final class BucketTable
{
    /** Bytes of one slot ({@link BucketSlots} has the layout). */
    public static final int SLOT_LENGTH = BucketSlots.SLOT_LENGTH;
    /** Largest fraction of slots in use; beyond it inserts first evict full buckets. */
    public static final double MAX_LOAD_FACTOR = 0.7;
    /** Largest key the table stores, in bytes. */
    public static final int MAX_KEY_LENGTH = KeyArena.MAX_KEY_LENGTH;

    /** Slots examined by the sweep of an insert that finds the table full, before it refuses. */
    private static final int SWEEP_SLOTS = 1024;
    /** Slots examined by every insert once the table is 7/8 full, so full buckets rarely pile up. */
    private static final int BACKGROUND_SWEEP_SLOTS = 16;
    private static final int MAX_SLOTS = 1 << 25;
    /** Most buckets one table can hold (2^25 slots, 1 GiB, at the maximum load factor). */
    public static final int MAX_BUCKETS = (int)(MAX_SLOTS * MAX_LOAD_FACTOR);

    /** Slots a new table starts with (512 KiB). */
    public static final int INITIAL_SLOTS = 1 << 14;

    private static final int CACHE_LINE = 64;

    private final UnsafeBuffer slots = new UnsafeBuffer(0, 0);
    /** Scratch for a lease's record key ({@link BucketKeys#putLeaseKey}), owner thread only. */
    private final UnsafeBuffer leaseKey = new UnsafeBuffer(new byte[KeyArena.MAX_KEY_LENGTH + BucketKeys.LEASE_ID_LENGTH]);
    /** The length of the record key {@link #leaseKey} holds. */
    private int leaseKeyLength;
    /** The key time {@link #load} decided at (owner thread). */
    private long loadedNow;
    private ByteBuffer slotMemory;
    private int slotCount;
    private int mask;
    private int growAt;
    private final int maxSlotCount;
    private final int maxBuckets;
    private final KeyArena arena;
    private final BucketRates rates;
    private int size;
    private int sweepCursor;
    private long evictions;
    private long storeFullRejections;
    private final boolean tracksDigest;
    /** Added to the cluster's monotonic time for limits on its UTC wall time (windows): set per batch by the owner. */
    private long wallClockOffsetNanos;
    /** Sum of every stored bucket's {@link #contribution}: equals {@link #digest()} when tracked. */
    private long trackedDigest;
    /** What other threads may read: written by the owner in {@link #publish()} only. */
    private final AtomicLongArray published = new AtomicLongArray(PUBLISHED_FIELDS);
    private static final int PUBLISHED_SIZE = 0;
    private static final int PUBLISHED_SLOTS = 1;
    private static final int PUBLISHED_EVICTIONS = 2;
    private static final int PUBLISHED_FULL = 3;
    private static final int PUBLISHED_DIGEST = 4;
    private static final int PUBLISHED_KEY_BYTES = 5;
    private static final int PUBLISHED_FIELDS = 6;

    /**
     * Test builds turn this on ({@code -Dlimiter.table.ownerChecks=true}): any use of a table's
     * state by a thread other than its owner then throws, so a cross-thread read cannot hide
     * behind a lucky race. Off by default, and then free (the JIT drops the checks).
     */
    static final boolean OWNER_CHECKS = Boolean.getBoolean("limiter.table.ownerChecks");
    /** With {@link #OWNER_CHECKS}: the owning thread; null until the first use (or claim). */
    private Thread owner;

    /**
     * @param maxBuckets   most buckets held at once; the slot array is the next power of two at
     *                     or above {@code maxBuckets / MAX_LOAD_FACTOR}
     * @param keyArenaBytes bytes for keys (each key takes its length rounded up to 16, 32, ... 256)
     * @param rateByPolicy the rate of a policy ordinal, used to decide whether an idle bucket is full
     */
    public BucketTable(final int maxBuckets, final int keyArenaBytes, final IntFunction<? extends Limit> rateByPolicy)
    {
        this(maxBuckets, keyArenaBytes, rateByPolicy, false);
    }

    /**
     * @param tracksDigest keep the content digest current on every change (two hash mixes per
     *                     decision), so {@link #publish()} can publish it
     */
    public BucketTable(final int maxBuckets, final int keyArenaBytes, final IntFunction<? extends Limit> rateByPolicy,
        final boolean tracksDigest)
    {
        this(maxBuckets, keyArenaBytes, (policy, key, keyOffset, keyLength) -> rateByPolicy.apply(policy), tracksDigest);
    }

    /**
     * @param rates the rate a stored bucket refills at (from its policy ordinal and key), used to
     *              decide whether an idle bucket is full
     */
    public BucketTable(final int maxBuckets, final int keyArenaBytes, final BucketRates rates, final boolean tracksDigest)
    {
        if (maxBuckets < 1)
        {
            throw new IllegalArgumentException("maxBuckets must be at least 1, was " + maxBuckets);
        }
        if (maxBuckets > MAX_BUCKETS)
        {
            throw new IllegalArgumentException("maxBuckets " + maxBuckets + " per shard is too many (at most " +
                MAX_BUCKETS + "); use more shards");
        }
        final long wanted = (long)Math.ceil(maxBuckets / MAX_LOAD_FACTOR);
        if (keyArenaBytes < KeyArena.MAX_KEY_LENGTH)
        {
            throw new IllegalArgumentException("keyArenaBytes must be at least " + KeyArena.MAX_KEY_LENGTH + ", was " + keyArenaBytes);
        }
        this.maxSlotCount = Math.max(16, Integer.highestOneBit((int)wanted - 1) << 1);
        this.maxBuckets = maxBuckets;
        allocateSlots(Math.min(INITIAL_SLOTS, maxSlotCount));
        this.arena = new KeyArena(keyArenaBytes);
        this.rates = rates;
        this.tracksDigest = tracksDigest;
        published.lazySet(PUBLISHED_SLOTS, slotCount); // not publish(): the constructing thread is not the owner
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
        growAt = count == maxSlotCount ? Integer.MAX_VALUE : (int)(count * MAX_LOAD_FACTOR);
        if (previous != null)
        {
            BufferUtil.free(previous);
        }
    }

    /**
     * The calling thread takes the table over from its previous owner, which must no longer use
     * it (a Raft callback on a new thread, say). Only checked with {@link #OWNER_CHECKS}.
     */
    public void claim()
    {
        owner = Thread.currentThread();
    }

    private void checkOwner()
    {
        final Thread current = Thread.currentThread();
        if (owner == null)
        {
            owner = current;
        }
        else if (owner != current)
        {
            throw new IllegalStateException("bucket table of " + owner.getName() + " used from " + current.getName() +
                ": only its owner may touch it (other threads read what it published)");
        }
    }

    /** Doubles the slot array and re-inserts every bucket, visiting the old slots in order. */
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
                int slot = (int)old.getLong(fromBase + HASH_OFFSET) & mask;
                while ((slots.getShort(slot * SLOT_LENGTH + KEY_LENGTH_OFFSET) & 0xFFFF) != 0)
                {
                    slot = (slot + 1) & mask;
                }
                slots.putBytes(slot * SLOT_LENGTH, old, fromBase, SLOT_LENGTH);
            }
        }
        sweepCursor = 0;
        BufferUtil.free(oldMemory);
    }

    /**
     * The atomic step of a key's limit for one request at time {@code nowNanos}: load (or start
     * full), refill, allow iff enough is available, charge, store.
     *
     * @param key       key bytes; {@code keyLength} in [1, {@link #MAX_KEY_LENGTH}]
     * @param hash      {@link KeyHash#hash} of the key
     * @param policy    ordinal of the policy the key belongs to (part of the key, too)
     * @param limit     that policy's limit
     * @param cost      tokens asked for, at least 1
     * @param nowNanos  the cluster's monotonic time (limits on wall time add {@link #wallClockOffset})
     * @param out       receives the outcome
     */
    public void acquire(
        final DirectBuffer key,
        final int keyOffset,
        final int keyLength,
        final long hash,
        final int policy,
        final Limit limit,
        final long cost,
        final long nowNanos,
        final Verdict out)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        final int slot = find(key, keyOffset, keyLength, hash);
        final long state = load(slot, limit, nowNanos);
        final long now = loadedNow;
        final long after = Admission.decide(limit, state, now, cost, 0, out);
        if (out.reason() == ReasonCode.COST_EXCEEDS_BURST)
        {
            return; // never satisfiable: nothing changes
        }
        if (slot >= 0)
        {
            store(slot * SLOT_LENGTH, after, now);
        }
        else if (out.allowed() && !insert(key, keyOffset, keyLength, hash, policy, after, now, nowNanos))
        {
            storeFullRejections++;
            out.set(false, ReasonCode.STORE_FULL, limit.burstTokens(), 0, 0);
        }
    }

    /** What {@link #releaseLease} found. */
    public enum LeaseRelease
    {
        /** The lease was held: its cost is free again and its record gone. */
        FREED,
        /** This key has no lease of that id: never granted (a forged id), another key's, given back already, or expired and swept. */
        UNKNOWN,
        /** The lease had expired: it counted no more, so nothing more is freed (its record is gone). */
        EXPIRED
    }

    /**
     * Records the lease {@code leaseId} that a grant of {@code costUnits} at {@code grantNanos} just
     * took on the key of a concurrency limit, under a key of its own ({@link BucketKeys#putLeaseKey}):
     * a release naming it frees exactly it, once, at that cost. When there is no room for the
     * record, or the id is held already, the grant is given back on the limit's key and {@code out}
     * says STORE_FULL: no lease counts that no release could name.
     *
     * @return whether the lease is recorded
     */
    public boolean takeLease(
        final DirectBuffer key,
        final int keyOffset,
        final int keyLength,
        final long hash,
        final int policy,
        final Limit limit,
        final long leaseId,
        final long costUnits,
        final long grantNanos,
        final long nowNanos,
        final Verdict out)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        final long leaseHash = leaseKey(key, keyOffset, keyLength, leaseId);
        if (leaseKeyLength <= MAX_KEY_LENGTH && find(leaseKey, 0, leaseKeyLength, leaseHash) < 0 &&
            insert(leaseKey, 0, leaseKeyLength, leaseHash, policy, costUnits, grantNanos, nowNanos))
        {
            return true;
        }
        final int slot = find(key, keyOffset, keyLength, hash);
        if (slot >= 0)
        {
            final long state = load(slot, limit, nowNanos);
            store(slot * SLOT_LENGTH, limit.release(state, loadedNow, grantNanos, costUnits), loadedNow);
        }
        storeFullRejections++;
        out.set(false, ReasonCode.STORE_FULL, limit.burstTokens(), 0, 0);
        return false;
    }

    /**
     * Gives back the lease {@code leaseId} of a key of a concurrency limit, if the key holds it:
     * its record's cost comes off the granule of its grant ({@link Limit#release}) and the record
     * goes, so a second release of it frees nothing. Nothing is freed for an id the key does not
     * hold, whatever the caller says it cost. Always answers RELEASED with what the key has free
     * after it.
     *
     * @param nowNanos the cluster's monotonic time
     */
    public LeaseRelease releaseLease(
        final DirectBuffer key,
        final int keyOffset,
        final int keyLength,
        final long hash,
        final Limit limit,
        final long leaseId,
        final long nowNanos,
        final Verdict out)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        LeaseRelease outcome = LeaseRelease.UNKNOWN;
        final long leaseHash = leaseKey(key, keyOffset, keyLength, leaseId);
        final int record = limit.leases() && leaseKeyLength <= MAX_KEY_LENGTH ? find(leaseKey, 0, leaseKeyLength, leaseHash) : -1;
        if (record >= 0)
        {
            final int base = record * SLOT_LENGTH;
            final long costUnits = slots.getLong(base + STATE_OFFSET);
            final long grantNanos = slots.getLong(base + TIME_OFFSET);
            delete(record);
            final int slot = find(key, keyOffset, keyLength, hash);
            if (limit.leaseExpired(grantNanos, Math.max(grantNanos, timeFor(limit, nowNanos))))
            {
                outcome = LeaseRelease.EXPIRED;
            }
            else
            {
                outcome = LeaseRelease.FREED;
                if (slot >= 0)
                {
                    final long state = load(slot, limit, nowNanos);
                    store(slot * SLOT_LENGTH, limit.release(state, loadedNow, grantNanos, costUnits), loadedNow);
                }
            }
        }
        final long state = load(limit.leases() ? find(key, keyOffset, keyLength, hash) : -1, limit, nowNanos);
        final long now = loadedNow;
        out.set(true, ReasonCode.RELEASED, limit.wholeTokens(limit.available(state, now)), 0, limit.nanosUntilFull(state, now));
        return outcome;
    }

    /** Writes the record key of a key's lease into {@link #leaseKey} (its length in {@link #leaseKeyLength}); returns its hash. */
    private long leaseKey(final DirectBuffer key, final int keyOffset, final int keyLength, final long leaseId)
    {
        leaseKeyLength = BucketKeys.putLeaseKey(leaseKey, 0, key, keyOffset, keyLength, leaseId);
        return KeyHash.hash(leaseKey, 0, leaseKeyLength);
    }

    /**
     * The state of the key in {@code slot} (or of one never seen, for -1) refilled to
     * {@code nowNanos}, its time left in {@link #loadedNow}: never earlier than the stored time
     * (elapsed time is clamped at zero, so the old stamp stays). Owner thread only.
     */
    private long load(final int slot, final Limit limit, final long nowNanos)
    {
        final long now = timeFor(limit, nowNanos);
        if (slot < 0)
        {
            loadedNow = now;
            return limit.fullState();
        }
        final int base = slot * SLOT_LENGTH;
        final long last = slots.getLong(base + TIME_OFFSET);
        loadedNow = Math.max(last, now);
        return limit.refill(slots.getLong(base + STATE_OFFSET), last, loadedNow);
    }

    /** Writes a stored key's state and time, keeping the digest current when it is tracked. */
    private void store(final int base, final long state, final long now)
    {
        if (tracksDigest)
        {
            trackedDigest -= contribution(base);
        }
        slots.putLong(base + STATE_OFFSET, state);
        slots.putLong(base + TIME_OFFSET, now);
        if (tracksDigest)
        {
            trackedDigest += contribution(base);
        }
    }

    /**
     * What {@link #acquire} would decide at {@code nowNanos} if the key had to keep
     * {@code floorUnits} available after the charge, changing nothing (hierarchical limits check
     * every scope before charging any; a reserve is the floor a lower-priority request may not go
     * below).
     *
     * @return whether it would allow; {@code out} holds the details either way
     */
    public boolean peek(
        final DirectBuffer key,
        final int keyOffset,
        final int keyLength,
        final long hash,
        final Limit limit,
        final long cost,
        final long floorUnits,
        final long nowNanos,
        final Verdict out)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        final long state = load(find(key, keyOffset, keyLength, hash), limit, nowNanos);
        Admission.decide(limit, state, loadedNow, cost, floorUnits, out);
        return out.allowed();
    }

    /**
     * Sets what is added to the cluster's monotonic time for limits on its UTC wall time
     * ({@link Limit#wallClock()}: windows aligned to UTC). The deciding shard sets its leader's
     * offset for a batch and writes it into the batch's log section; a replica replaying the
     * section sets the same, so both compute the same windows. Owner only.
     */
    public void wallClockOffset(final long offsetNanos)
    {
        wallClockOffsetNanos = offsetNanos;
    }

    private long timeFor(final Limit limit, final long nowNanos)
    {
        return limit.wallClock() ? nowNanos + wallClockOffsetNanos : nowNanos;
    }

    /**
     * First step of touching what {@link #acquire} of a key will read: the key's home slot. A caller
     * about to decide a batch touches every key's slot, then every key's bytes
     * ({@link #touchKey}), then decides: the cache misses of a batch then overlap instead of
     * coming one after another (on a table larger than the caches, two misses per decision).
     * Changes nothing.
     *
     * @return what was read, for {@link #touchKey}
     */
    public int touchSlot(final long hash)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        final int base = ((int)hash & mask) * SLOT_LENGTH;
        // Only a home slot holding this very hash leads to key bytes worth touching.
        return slots.getLong(base + HASH_OFFSET) == hash ? slots.getInt(base + KEY_OFFSET_OFFSET) : -1;
    }

    /**
     * Second step ({@link #touchSlot}): reads the first bytes of the key a home slot holds.
     *
     * @param keyOffset what {@link #touchSlot} returned
     * @return a value of no meaning, to be accumulated by the caller so the read stays
     */
    public long touchKey(final int keyOffset)
    {
        return keyOffset < 0 ? 0 : arena.buffer().getByte(keyOffset);
    }

    /** Slot index holding the key, or -1. */
    private int find(final DirectBuffer key, final int keyOffset, final int keyLength, final long hash)
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

    private boolean insert(
        final DirectBuffer key, final int keyOffset, final int keyLength, final long hash, final int policy,
        final long tokens, final long stamp, final long nowNanos)
    {
        if (keyLength < 1 || keyLength > MAX_KEY_LENGTH)
        {
            throw new IllegalArgumentException("key length " + keyLength + " outside [1, " + MAX_KEY_LENGTH + "]");
        }
        if (size >= maxBuckets)
        {
            sweep(nowNanos, SWEEP_SLOTS);
            if (size >= maxBuckets)
            {
                return false;
            }
        }
        else if (size >= maxBuckets - (maxBuckets >> 3))
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
        int slot = (int)hash & mask;
        while ((slots.getShort(slot * SLOT_LENGTH + KEY_LENGTH_OFFSET) & 0xFFFF) != 0)
        {
            slot = (slot + 1) & mask;
        }
        final int base = slot * SLOT_LENGTH;
        slots.putLong(base + HASH_OFFSET, hash);
        slots.putLong(base + STATE_OFFSET, tokens);
        slots.putLong(base + TIME_OFFSET, stamp);
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

    /**
     * Evicts buckets that have refilled to full by {@code nowNanos}, examining up to {@code limit}
     * slots from where the previous sweep stopped. Deterministic: the same operations at the same
     * times evict the same buckets.
     *
     * @return buckets evicted
     */
    public int sweep(final long nowNanos, final int limit)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        int evicted = 0;
        int examined = 0;
        int slot = sweepCursor;
        final int max = Math.min(limit, slotCount);
        while (examined < max)
        {
            final int base = slot * SLOT_LENGTH;
            final int length = slots.getShort(base + KEY_LENGTH_OFFSET) & 0xFFFF;
            if (length != 0 && isFull(base, nowNanos))
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

    private boolean isFull(final int base, final long nowNanos)
    {
        final Limit limit = rates.rate(slots.getShort(base + POLICY_OFFSET) & 0xFFFF, arena.buffer(),
            slots.getInt(base + KEY_OFFSET_OFFSET), slots.getShort(base + KEY_LENGTH_OFFSET) & KEY_LENGTH_MASK);
        if (limit == null)
        {
            return false; // a limit not known here (yet): keep the bucket
        }
        final long last = slots.getLong(base + TIME_OFFSET);
        final long now = Math.max(last, timeFor(limit, nowNanos));
        if ((slots.getShort(base + KEY_LENGTH_OFFSET) & KEY_LENGTH_MASK) >= BucketKeys.PREFIX_LENGTH + BucketKeys.LEASE_ID_LENGTH &&
            BucketKeys.isLease(BucketKeys.version(arena.buffer(), slots.getInt(base + KEY_OFFSET_OFFSET))))
        {
            return limit.leaseExpired(last, now); // a lease's record: its time is the grant's
        }
        return limit.isFull(limit.refill(slots.getLong(base + STATE_OFFSET), last, now), now);
    }

    private void delete(final int slotToDelete)
    {
        int hole = slotToDelete;
        final int holeBase = hole * SLOT_LENGTH;
        if (tracksDigest)
        {
            trackedDigest -= contribution(holeBase);
        }
        arena.free(slots.getInt(holeBase + KEY_OFFSET_OFFSET), (slots.getShort(holeBase + KEY_LENGTH_OFFSET) & 0xFFFF) >>> CHUNK_CLASS_SHIFT);
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

    /** Buckets held now. */
    public int size()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return size;
    }

    public int maxBuckets()
    {
        return maxBuckets;
    }

    /** Slots allocated now (a power of two; grows up to {@link #maxSlotCount()}). */
    public int slotCount()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return slotCount;
    }

    /** Slots the table grows to at most, as sized for {@code maxBuckets}. */
    public int maxSlotCount()
    {
        return maxSlotCount;
    }

    /** Off-heap bytes allocated for slots and keys now. */
    public long reservedBytes()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return (long)slotCount * SLOT_LENGTH + arena.capacity();
    }

    /** Key bytes in use (rounded to chunk sizes). */
    public long keyBytesInUse()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return arena.bytesInUse();
    }

    public long evictions()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return evictions;
    }

    public long storeFullRejections()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return storeFullRejections;
    }

    /**
     * Makes this table an exact copy of {@code other}, which must have the same sizes: slot for slot,
     * so that both evolve identically from here on. Reads {@code other} from this table's thread:
     * its owner must not touch it meanwhile (the Raft apply thread waits while leaders sync).
     */
    public void copyFrom(final BucketTable other)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        if (other.maxSlotCount != maxSlotCount || other.maxBuckets != maxBuckets)
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
        storeFullRejections = other.storeFullRejections;
        if (tracksDigest)
        {
            trackedDigest = other.tracksDigest ? other.trackedDigest : digest();
        }
    }

    /** Forgets every bucket and returns to the initial slot count, so what follows lays out as in a new table. */
    public void clear()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        if (slotCount != Math.min(INITIAL_SLOTS, maxSlotCount))
        {
            allocateSlots(Math.min(INITIAL_SLOTS, maxSlotCount));
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

    /** Receives buckets from {@link #forEach}. */
    @FunctionalInterface
    public interface BucketVisitor
    {
        void visit(DirectBuffer keyBuffer, int keyOffset, int keyLength, int policy, long tokensUnits, long lastNanos);
    }

    /** Visits every stored bucket in slot order (deterministic: equal tables visit equally). */
    public void forEach(final BucketVisitor visitor)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        BucketSlots.visit(slots, slotCount, arena.buffer(), visitor);
    }

    /**
     * Copies every bucket for a snapshot (owner thread): two memory copies, the slot array and the
     * keys in use, so the owner is held up for the copy only; the image is then read elsewhere.
     */
    public BucketTableImage image()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return new BucketTableImage(slots, slotCount, arena.buffer(), arena.bytesReserved(), size);
    }

    /**
     * Stores a bucket as given (restoring a snapshot).
     *
     * @return false when there is no room
     */
    public boolean restore(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy,
        final long tokensUnits, final long lastNanos)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        final long hash = KeyHash.hash(key, keyOffset, keyLength);
        final int slot = find(key, keyOffset, keyLength, hash);
        if (slot >= 0)
        {
            store(slot * SLOT_LENGTH, tokensUnits, lastNanos);
            return true;
        }
        return insert(key, keyOffset, keyLength, hash, policy, tokensUnits, lastNanos, Long.MIN_VALUE);
    }

    /**
     * A digest of the content (keys, policies, tokens, times), independent of slot layout: equal on
     * two replicas that hold the same buckets.
     */
    public long digest()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
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

    /** One stored bucket's part of the digest (the key enters through its stored hash). */
    private long contribution(final int base)
    {
        return KeyHash.mix(slots.getLong(base + HASH_OFFSET) ^
            KeyHash.mix(slots.getLong(base + STATE_OFFSET) * 31 + slots.getLong(base + TIME_OFFSET)) ^
            (slots.getShort(base + POLICY_OFFSET) & 0xFFFF));
    }

    /**
     * The digest as kept on every change (owner thread).
     *
     * @throws IllegalStateException when this table was built without {@code tracksDigest}
     */
    public long trackedDigest()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        if (!tracksDigest)
        {
            throw new IllegalStateException("this table does not track its digest");
        }
        return trackedDigest;
    }

    /**
     * Makes the current counts (and the tracked digest) readable by other threads. Owner thread
     * only; call it after a batch of changes (a frame, a log entry). Release stores: no fence.
     */
    public void publish()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        published.lazySet(PUBLISHED_SIZE, size);
        published.lazySet(PUBLISHED_SLOTS, slotCount);
        published.lazySet(PUBLISHED_EVICTIONS, evictions);
        published.lazySet(PUBLISHED_FULL, storeFullRejections);
        published.lazySet(PUBLISHED_KEY_BYTES, arena.bytesInUse());
        if (tracksDigest)
        {
            published.lazySet(PUBLISHED_DIGEST, trackedDigest);
        }
    }

    /** Buckets held as last published (any thread). */
    public int publishedSize()
    {
        return (int)published.get(PUBLISHED_SIZE);
    }

    /** Off-heap bytes reserved for slots and keys as last published (any thread). */
    public long publishedReservedBytes()
    {
        return published.get(PUBLISHED_SLOTS) * SLOT_LENGTH + arena.capacity();
    }

    /** Evictions as last published (any thread). */
    public long publishedEvictions()
    {
        return published.get(PUBLISHED_EVICTIONS);
    }

    /** {@code STORE_FULL} refusals as last published (any thread). */
    public long publishedStoreFullRejections()
    {
        return published.get(PUBLISHED_FULL);
    }

    /** Key bytes in use as last published (any thread). */
    public long publishedKeyBytesInUse()
    {
        return published.get(PUBLISHED_KEY_BYTES);
    }

    /** The content digest as last published (any thread; 0 unless the table tracks it). */
    public long publishedDigest()
    {
        return published.get(PUBLISHED_DIGEST);
    }

    /** Tokens (units) of the bucket for a key as stored, or -1 when absent (a full bucket). For tests and tools. */
    public long storedUnits(final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        final int slot = find(key, keyOffset, keyLength, KeyHash.hash(key, keyOffset, keyLength));
        return slot < 0 ? -1 : slots.getLong(slot * SLOT_LENGTH + STATE_OFFSET);
    }
}
