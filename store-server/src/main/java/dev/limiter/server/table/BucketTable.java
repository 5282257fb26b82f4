package dev.limiter.server.table;

import dev.limiter.protocol.Admission;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.Verdict;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntFunction;


/**
 * One shard's token buckets: the admission step of each key's limit ({@link Admission}) on state
 * kept off-heap by a {@link SlotMap} (open addressing on a 64-bit key hash with full key
 * comparison, so a hash collision can never merge two buckets), plus the records of concurrency
 * leases. Owned by exactly one thread: nothing here is synchronised and the decision path
 * allocates nothing.
 * <p>
 * A full bucket is the same as an absent one, so full buckets are never stored and idle buckets
 * that have refilled are evicted deterministically when the table or its key arena runs out of
 * room ({@link SlotMap} sweeps; this class says what is full). The slot array starts small
 * ({@link #INITIAL_SLOTS}) and doubles up to what {@code maxBuckets} needs, so a shard holding ten
 * thousand buckets touches half a megabyte of slots rather than the full reservation.
 * <p>
 * Other threads never read the slots or the arena (growth frees the old slot memory at once):
 * what they may know of a table is what its owner last {@link #publish() published}
 * ({@link #publishedSize()}, {@link #publishedDigest()} and the like). A table built with
 * {@code tracksDigest} keeps its content digest up to date on every change, so publishing it costs
 * nothing (the committed tables of a cluster do; the deciding ones need not).
 * <p>
 * The slot layout is {@link BucketSlots}'s, the storage {@link SlotMap}'s, the admission rule
 * {@link Admission}'s.
 */
public final class BucketTable
{
    /** Bytes of one slot ({@link BucketSlots} has the layout). */
    public static final int SLOT_LENGTH = BucketSlots.SLOT_LENGTH;
    /** Largest fraction of slots in use; beyond it inserts first evict full buckets. */
    public static final double MAX_LOAD_FACTOR = 0.7;
    /** Largest key the table stores, in bytes. */
    public static final int MAX_KEY_LENGTH = KeyArena.MAX_KEY_LENGTH;

    private static final int MAX_SLOTS = 1 << 25;
    /** Most buckets one table can hold (2^25 slots, 1 GiB, at the maximum load factor). */
    public static final int MAX_BUCKETS = (int)(MAX_SLOTS * MAX_LOAD_FACTOR);

    /** Slots a new table starts with (512 KiB). */
    public static final int INITIAL_SLOTS = 1 << 14;

    private final SlotMap map;
    private final BucketRates rates;
    /** Scratch for a lease's record key ({@link BucketKeys#putLeaseKey}), owner thread only. */
    private final UnsafeBuffer leaseKey = new UnsafeBuffer(new byte[KeyArena.MAX_KEY_LENGTH
        + BucketKeys.LEASE_ID_LENGTH]);
    /** The length of the record key {@link #leaseKey} holds. */
    private int leaseKeyLength;
    /** The key time {@link #load} decided at (owner thread). */
    private long loadedNow;
    private long storeFullRejections;
    /** Added to the cluster's monotonic time for limits on its UTC wall time (windows): set per batch by the owner. */
    private long wallClockOffsetNanos;
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
        this(maxBuckets, keyArenaBytes, (policy, key, keyOffset, keyLength) -> rateByPolicy.apply(policy),
            tracksDigest);
    }

    /**
     * @param rates the rate a stored bucket refills at (from its policy ordinal and key), used to
     *              decide whether an idle bucket is full
     */
    public BucketTable(final int maxBuckets, final int keyArenaBytes, final BucketRates rates,
        final boolean tracksDigest)
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
            throw new IllegalArgumentException("keyArenaBytes must be at least " + KeyArena.MAX_KEY_LENGTH
                + ", was " + keyArenaBytes);
        }
        final int maxSlotCount = Math.max(16, Integer.highestOneBit((int)wanted - 1) << 1);
        this.rates = rates;
        this.map = new SlotMap(maxBuckets, maxSlotCount, INITIAL_SLOTS, keyArenaBytes, tracksDigest, this::isFull);
        published.lazySet(PUBLISHED_SLOTS, map.slotCount()); // not publish(): the constructing thread is not the owner
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
        final int slot = map.find(key, keyOffset, keyLength, hash);
        final long state = load(slot, limit, nowNanos);
        final long now = loadedNow;
        final long after = Admission.decide(limit, state, now, cost, 0, out);
        if (out.reason() == ReasonCode.COST_EXCEEDS_BURST)
        {
            return; // never satisfiable: nothing changes
        }
        if (slot >= 0)
        {
            map.write(slot, after, now);
        }
        else if (out.allowed() && !map.insert(key, keyOffset, keyLength, hash, policy, after, now, nowNanos))
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
        /**
         * This key has no lease of that id: never granted (a forged id), another key's, given back already, or expired
         * and swept.
         */
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
        if (leaseKeyLength <= MAX_KEY_LENGTH && map.find(leaseKey, 0, leaseKeyLength, leaseHash) < 0 &&
            map.insert(leaseKey, 0, leaseKeyLength, leaseHash, policy, costUnits, grantNanos, nowNanos))
        {
            return true;
        }
        final int slot = map.find(key, keyOffset, keyLength, hash);
        if (slot >= 0)
        {
            final long state = load(slot, limit, nowNanos);
            map.write(slot, limit.release(state, loadedNow, grantNanos, costUnits), loadedNow);
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
        final int record = limit.leases() && leaseKeyLength <= MAX_KEY_LENGTH ? map.find(leaseKey, 0, leaseKeyLength,
            leaseHash) : -1;
        if (record >= 0)
        {
            final long costUnits = map.state(record);
            final long grantNanos = map.time(record);
            map.delete(record);
            final int slot = map.find(key, keyOffset, keyLength, hash);
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
                    map.write(slot, limit.release(state, loadedNow, grantNanos, costUnits), loadedNow);
                }
            }
        }
        final long state = load(limit.leases() ? map.find(key, keyOffset, keyLength, hash) : -1, limit, nowNanos);
        final long now = loadedNow;
        out.set(true, ReasonCode.RELEASED, limit.wholeTokens(limit.available(state, now)), 0,
            limit.nanosUntilFull(state, now));
        return outcome;
    }

    /**
     * Writes the record key of a key's lease into {@link #leaseKey} (its length in {@link #leaseKeyLength}); returns
     * its hash.
     */
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
        final long last = map.time(slot);
        loadedNow = Math.max(last, now);
        return limit.refill(map.state(slot), last, loadedNow);
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
        final long state = load(map.find(key, keyOffset, keyLength, hash), limit, nowNanos);
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
        // Only a home slot holding this very hash leads to key bytes worth touching.
        return map.homeKeyOffset(hash);
    }

    /**
     * Second step ({@link #touchSlot}): reads the first bytes of the key a home slot holds.
     *
     * @param keyOffset what {@link #touchSlot} returned
     * @return a value of no meaning, to be accumulated by the caller so the read stays
     */
    public long touchKey(final int keyOffset)
    {
        return keyOffset < 0 ? 0 : map.keys().getByte(keyOffset);
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
        return map.sweep(nowNanos, limit);
    }

    /** Whether the bucket (or lease record) in a slot has refilled to full (expired) by {@code nowNanos}: it may go. */
    private boolean isFull(final SlotMap slots, final int slot, final long nowNanos)
    {
        final int keyAt = slots.keyOffset(slot);
        final int keyLength = slots.keyLength(slot);
        final Limit limit = rates.rate(slots.policy(slot), slots.keys(), keyAt, keyLength);
        if (limit == null)
        {
            return false; // a limit not known here (yet): keep the bucket
        }
        final long last = slots.time(slot);
        final long now = Math.max(last, timeFor(limit, nowNanos));
        if (keyLength >= BucketKeys.PREFIX_LENGTH + BucketKeys.LEASE_ID_LENGTH &&
            BucketKeys.isLease(BucketKeys.version(slots.keys(), keyAt)))
        {
            return limit.leaseExpired(last, now); // a lease's record: its time is the grant's
        }
        return limit.isFull(limit.refill(slots.state(slot), last, now), now);
    }

    /** Buckets held now. */
    public int size()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return map.size();
    }

    public int maxBuckets()
    {
        return map.maxEntries();
    }

    /** Slots allocated now (a power of two; grows up to {@link #maxSlotCount()}). */
    public int slotCount()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return map.slotCount();
    }

    /** Slots the table grows to at most, as sized for {@code maxBuckets}. */
    public int maxSlotCount()
    {
        return map.maxSlotCount();
    }

    /** Off-heap bytes allocated for slots and keys now. */
    public long reservedBytes()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return map.reservedBytes();
    }

    /** Key bytes in use (rounded to chunk sizes). */
    public long keyBytesInUse()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return map.keyBytesInUse();
    }

    public long evictions()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        return map.evictions();
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
        map.copyFrom(other.map);
        storeFullRejections = other.storeFullRejections;
    }

    /** Forgets every bucket and returns to the initial slot count, so what follows lays out as in a new table. */
    public void clear()
    {
        if (OWNER_CHECKS)
        {
            checkOwner();
        }
        map.clear();
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
        map.forEach(visitor);
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
        return map.image();
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
        final int slot = map.find(key, keyOffset, keyLength, hash);
        if (slot >= 0)
        {
            map.write(slot, tokensUnits, lastNanos);
            return true;
        }
        return map.insert(key, keyOffset, keyLength, hash, policy, tokensUnits, lastNanos, Long.MIN_VALUE);
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
        return map.digest();
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
        if (!map.tracksDigest())
        {
            throw new IllegalStateException("this table does not track its digest");
        }
        return map.trackedDigest();
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
        published.lazySet(PUBLISHED_SIZE, map.size());
        published.lazySet(PUBLISHED_SLOTS, map.slotCount());
        published.lazySet(PUBLISHED_EVICTIONS, map.evictions());
        published.lazySet(PUBLISHED_FULL, storeFullRejections);
        published.lazySet(PUBLISHED_KEY_BYTES, map.keyBytesInUse());
        if (map.tracksDigest())
        {
            published.lazySet(PUBLISHED_DIGEST, map.trackedDigest());
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
        return published.get(PUBLISHED_SLOTS) * SLOT_LENGTH + map.keyCapacity();
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
        final int slot = map.find(key, keyOffset, keyLength, KeyHash.hash(key, keyOffset, keyLength));
        return slot < 0 ? -1 : map.state(slot);
    }
}
