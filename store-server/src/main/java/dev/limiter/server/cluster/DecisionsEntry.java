package dev.limiter.server.cluster;

import dev.limiter.protocol.Limit;
import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.KeyHash;
import dev.limiter.protocol.Verdict;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The one owner of the DECISIONS log entry: a leader's shards write its sections, every replica
 * (and a leader re-syncing its own table) replays them. An entry is one or more sections back to
 * back, one per shard batch (the shards of a Raft group share entries: {@link LogSubmitter}).
 * A section comes in one of two layouts, named by its first byte; both share the header:
 *
 * <pre>
 * header:  u8 type | u16 shard | u32 count | i64 wall-clock offset (ns; UTC = decision time + offset)
 *
 * COMPACT (type 4, written by default):
 *   count x (varint policy ordinal | zigzag varint cost
 *            | zigzag varint decision time (ns) minus the previous record's (the first record's minus 0)
 *            | varint key length (| LEASED) | [i64 lease id, when cost &lt; 0 or LEASED] | key)
 * CLASSIC (type 1, written with --log-format classic, and by builds before the compact layout):
 *   count x (u16 policy ordinal | i32 cost | i64 decision time (ns) | u16 key length (| LEASED)
 *            | [i64 lease id, when cost &lt; 0 or LEASED] | key)
 * </pre>
 * Varints are unsigned LEB128 (7 bits a byte, low first); zigzag maps a signed value to an unsigned
 * one (0, -1, 1, -2 ... to 0, 1, 2, 3 ...). A compact record of a one-token decision with a
 * tenant key takes 6 bytes before its key where a classic one takes 16: the log, what the leader
 * sends each follower, and what they write and checksum shrink by about a third at the same load.
 * Every reader accepts both layouts (a log may hold both after an upgrade).
 *
 * <p>A record whose cost is negative gives back the lease it names (a RELEASE of a concurrency
 * limit's lease, {@link BucketTable#releaseLease}: the lease's record says what it cost); any other
 * record is an acquire. An acquire whose key length carries {@link #LEASED} took a lease of that
 * id when granted ({@link BucketTable#takeLease}): the id is random, chosen by the leader, so it
 * travels in the log.
 * A key starts with its policy's ordinal and version ({@link BucketKeys}): a decision is
 * replayed with the rate of the version it was made under, even when a later version was
 * applied before it. Replaying repeats exactly what the leader did (same key, policy, cost and
 * cluster time, in the same order, and the section's wall-clock offset for limits whose windows
 * are aligned to UTC), so every table fed the same entries holds the same buckets. Sections
 * written before the offset existed carry 0 there (no window policies existed then).
 */
public final class DecisionsEntry
{
    /** First byte of a section (and so of an entry) in the classic layout: fixed-width records. */
    public static final byte TYPE = 1;
    /** First byte of a section (and so of an entry) in the compact layout: varint records. */
    public static final byte COMPACT_TYPE = 4;
    /** Bytes before the first record. */
    public static final int HEADER = 15;
    /** Bytes of an acquire's record before its key. */
    public static final int RECORD_HEADER = 16;
    /** Bytes a release's record, or a leased acquire's, has beyond an acquire's: the lease id, before the key. */
    public static final int LEASE_ID_LENGTH = 8;
    /** Set in a record's key length: an acquire that took the lease whose id follows (a key is never this long). */
    public static final int LEASED = 0x8000;
    /** Most bytes a compact record takes before its key: policy 3, cost 5, time 10, key length 3, lease id 8. */
    public static final int MAX_COMPACT_RECORD_HEADER = 3 + 5 + 10 + 3 + LEASE_ID_LENGTH;

    /**
     * The limit a decision was made under: ordinal, version and which of the policy's limits (0 its
     * own, k its extra limit k - 1), as its key names them ({@link BucketKeys}), on the shard its
     * section names (a budget split across shards has a share per shard).
     */
    @FunctionalInterface
    public interface Rates
    {
        Limit rate(int ordinal, long version, int limitIndex, int shard);
    }

    /** Reusable state for replaying (one per thread). */
    public static final class Replayer
    {
        /** Decisions whose table memory is touched before any of them is applied (their cache misses overlap). */
        private static final int AHEAD = 16;

        private final Verdict scratch = new Verdict();
        private final UnsafeBuffer keyView = new UnsafeBuffer(new byte[0]);
        private final Rates rates;
        private final int[] policies = new int[AHEAD];
        private final int[] costs = new int[AHEAD];
        private final long[] times = new long[AHEAD];
        private final long[] leaseIds = new long[AHEAD];
        private final boolean[] leased = new boolean[AHEAD];
        private final int[] keyStarts = new int[AHEAD];
        private final int[] keyLengths = new int[AHEAD];
        private final long[] hashes = new long[AHEAD];
        private final int[] touched = new int[AHEAD];
        /** What touching read: kept so that the reads are not optimised away. */
        private long touchedSum;

        public Replayer(final Rates rates)
        {
            this.rates = rates;
        }

        /**
         * Applies every decision of the section at {@code entry}'s position to {@code table}.
         *
         * @return the decisions applied
         */
        public int replay(final ByteBuffer entry, final BucketTable table)
        {
            final int at = entry.position();
            replaySection(entry, at, table);
            return count(entry, at);
        }

        /**
         * Applies every decision of the section that starts at {@code at} of {@code entry} to
         * {@code table}, {@link #AHEAD} at a time: first their slots and stored keys are touched
         * ({@link BucketTable#touchSlot}), then they are applied in order.
         *
         * @return where the next section starts (the entry's limit after the last one)
         */
        public int replaySection(final ByteBuffer entry, final int start, final BucketTable table)
        {
            final boolean compact = compact(entry, start);
            final int shard = shard(entry, start);
            final int count = entry.getInt(start + 3);
            table.wallClockOffset(wallClockOffset(entry, start));
            int at = start + HEADER;
            long previousTime = 0;
            long sum = 0;
            final VarintReader varints = new VarintReader();
            for (int done = 0; done < count; )
            {
                final int n = Math.min(AHEAD, count - done);
                for (int k = 0; k < n; k++)
                {
                    if (compact)
                    {
                        varints.at = at;
                        policies[k] = varints.policy(entry);
                        costs[k] = varints.cost(entry);
                        previousTime += unzigzag(varints.next(entry));
                        times[k] = previousTime;
                        final int field = varints.keyLengthField(entry);
                        leased[k] = (field & LEASED) != 0;
                        keyLengths[k] = field & ~LEASED;
                        at = varints.at;
                    }
                    else
                    {
                        policies[k] = entry.getShort(at) & 0xFFFF;
                        costs[k] = entry.getInt(at + 2);
                        times[k] = entry.getLong(at + 6);
                        final int field = checkKeyLengthField(entry.getShort(at + 14) & 0xFFFF, at + 14);
                        leased[k] = (field & LEASED) != 0;
                        keyLengths[k] = field & ~LEASED;
                        at += RECORD_HEADER;
                    }
                    if (costs[k] < 0 || leased[k])
                    {
                        leaseIds[k] = entry.getLong(at);
                        at += LEASE_ID_LENGTH;
                    }
                    keyStarts[k] = at;
                    keyView.wrap(entry, at, keyLengths[k]);
                    hashes[k] = KeyHash.hash(keyView, 0, keyLengths[k]);
                    touched[k] = table.touchSlot(hashes[k]);
                    at += keyLengths[k];
                }
                for (int k = 0; k < n; k++)
                {
                    sum += table.touchKey(touched[k]);
                }
                for (int k = 0; k < n; k++)
                {
                    final int policy = policies[k];
                    final int cost = costs[k];
                    final long time = times[k];
                    final int keyLength = keyLengths[k];
                    keyView.wrap(entry, keyStarts[k], keyLength);
                    final long version = BucketKeys.version(keyView, 0);
                    final Limit limit = rates.rate(policy, BucketKeys.policyVersion(version), BucketKeys.limitIndex(version), shard);
                    if (cost < 0)
                    {
                        table.releaseLease(keyView, 0, keyLength, hashes[k], limit, leaseIds[k], time, scratch);
                    }
                    else
                    {
                        table.acquire(keyView, 0, keyLength, hashes[k], policy, limit, cost, time, scratch);
                        if (leased[k] && scratch.allowed() && limit.leases())
                        {
                            table.takeLease(keyView, 0, keyLength, hashes[k], policy, limit, leaseIds[k], limit.costUnits(cost),
                                scratch.timeNanos(), time, scratch);
                        }
                    }
                }
                done += n;
            }
            touchedSum += sum;
            return at;
        }
    }

    /**
     * Builds one shard's sections, one at a time (its owner thread only): records are appended, then
     * the section is taken whole with its header, and the next one starts afresh (a compact
     * section's first record carries its time whole, the others the difference).
     */
    public static final class SectionWriter
    {
        private final boolean compact;
        private byte[] buffer;
        private ByteBuffer view;
        private int position = HEADER;
        private int count;
        /** The time of the pending section's last record, 0 before its first. */
        private long previousTime;

        /**
         * @param compact      the compact layout, else the classic one
         * @param initialBytes the buffer's first size (it grows as a section needs)
         */
        public SectionWriter(final boolean compact, final int initialBytes)
        {
            this.compact = compact;
            this.buffer = new byte[Math.max(HEADER + maxRecordLength(BucketTable.MAX_KEY_LENGTH), initialBytes)];
            this.view = ByteBuffer.wrap(buffer);
        }

        /** Appends an acquire of {@code cost} tokens of the key, made under {@code policy} at cluster time {@code time} (ns). */
        public void append(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy, final int cost, final long time)
        {
            ensureRoom(keyLength);
            if (compact)
            {
                position = putCompactRecord(view, buffer, position, policy, cost, ACQUIRE, 0, time, previousTime, key, keyOffset, keyLength);
            }
            else
            {
                putRecord(view, buffer, position, policy, cost, time, key, keyOffset, keyLength);
                position += recordLength(keyLength);
            }
            recorded(time);
        }

        /** Appends an acquire whose grant took the lease {@code leaseId} ({@link BucketTable#takeLease}). */
        public void appendLeased(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy, final int cost,
            final long leaseId, final long time)
        {
            ensureRoom(keyLength);
            if (compact)
            {
                position = putCompactRecord(view, buffer, position, policy, cost, LEASED_ACQUIRE, leaseId, time, previousTime, key, keyOffset,
                    keyLength);
            }
            else
            {
                putLeasedRecord(view, buffer, position, policy, cost, leaseId, time, key, keyOffset, keyLength);
                position += releaseRecordLength(keyLength);
            }
            recorded(time);
        }

        /** Appends a release of the lease {@code leaseId} of the key (which cost {@code cost}, at least 1), at cluster time {@code time} (ns). */
        public void appendRelease(final DirectBuffer key, final int keyOffset, final int keyLength, final int policy, final int cost,
            final long leaseId, final long time)
        {
            ensureRoom(keyLength);
            if (compact)
            {
                position = putCompactRecord(view, buffer, position, policy, cost, RELEASE, leaseId, time, previousTime, key, keyOffset, keyLength);
            }
            else
            {
                putReleaseRecord(view, buffer, position, policy, cost, leaseId, time, key, keyOffset, keyLength);
                position += releaseRecordLength(keyLength);
            }
            recorded(time);
        }

        /** Records in the pending section. */
        public int count()
        {
            return count;
        }

        /** Bytes of the pending section, its header included. */
        public int bytes()
        {
            return position;
        }

        /**
         * The pending section with its header in place, as a view of this writer's buffer: valid
         * until the next append, {@link #take} or {@link #clear}. The section stays pending.
         */
        public ByteBuffer pending(final int shard, final long wallClockOffset)
        {
            putHeader(view, compact, shard, count, wallClockOffset);
            return ByteBuffer.wrap(buffer, 0, position).slice();
        }

        /** A copy of the pending section with its header; the next section starts empty. */
        public ByteBuffer take(final int shard, final long wallClockOffset)
        {
            putHeader(view, compact, shard, count, wallClockOffset);
            final ByteBuffer section = ByteBuffer.wrap(Arrays.copyOf(buffer, position));
            clear();
            return section;
        }

        /** Drops the pending section. */
        public void clear()
        {
            position = HEADER;
            count = 0;
            previousTime = 0;
        }

        private void ensureRoom(final int keyLength)
        {
            final int needed = maxRecordLength(keyLength);
            if (position + needed > buffer.length)
            {
                buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, position + needed));
                view = ByteBuffer.wrap(buffer);
            }
        }

        private void recorded(final long time)
        {
            previousTime = time;
            count++;
        }
    }

    private DecisionsEntry()
    {
    }

    /** The shard of the first section of an entry positioned at its start. */
    public static int shard(final ByteBuffer entry)
    {
        return shard(entry, entry.position());
    }

    /** The shard of the section that starts at {@code at}. */
    public static int shard(final ByteBuffer entry, final int at)
    {
        return entry.getShort(at + 1) & 0xFFFF;
    }

    /** UTC minus cluster time for the decisions of the section that starts at {@code at}. */
    public static long wallClockOffset(final ByteBuffer entry, final int at)
    {
        return entry.getLong(at + 7);
    }

    /** Decisions in the first section of an entry positioned at its start. */
    public static int count(final ByteBuffer entry)
    {
        return count(entry, entry.position());
    }

    /** Decisions in the section that starts at {@code at}. */
    public static int count(final ByteBuffer entry, final int at)
    {
        return entry.getInt(at + 3);
    }

    /** Whether the section that starts at {@code at} is in the compact layout (refuses any other type). */
    public static boolean compact(final ByteBuffer entry, final int at)
    {
        final byte type = entry.get(at);
        if (type != TYPE && type != COMPACT_TYPE)
        {
            throw new IllegalArgumentException("not a DECISIONS section at byte " + at + " (type " + type + ")");
        }
        return type == COMPACT_TYPE;
    }

    /** Whether an entry whose first byte is {@code type} holds DECISIONS sections (either layout). */
    public static boolean isDecisions(final byte type)
    {
        return type == TYPE || type == COMPACT_TYPE;
    }

    /** Where the section that starts at {@code at} ends (the next one starts), read from its records' lengths. */
    public static int sectionEnd(final ByteBuffer entry, final int at)
    {
        final boolean compact = compact(entry, at);
        final int count = entry.getInt(at + 3);
        final VarintReader varints = new VarintReader();
        int end = at + HEADER;
        int i = 0;
        try
        {
            for (; i < count; i++)
            {
                final int cost;
                final int field;
                if (compact)
                {
                    varints.at = end;
                    varints.policy(entry);
                    cost = varints.cost(entry);
                    varints.next(entry); // time
                    field = varints.keyLengthField(entry);
                    end = varints.at;
                }
                else
                {
                    cost = entry.getInt(end + 2);
                    field = checkKeyLengthField(entry.getShort(end + 14) & 0xFFFF, end + 14);
                    end += RECORD_HEADER;
                }
                end += (cost < 0 || (field & LEASED) != 0 ? LEASE_ID_LENGTH : 0) + (field & ~LEASED);
            }
        }
        catch (final IndexOutOfBoundsException e)
        {
            throw new IllegalArgumentException("the DECISIONS section at byte " + at + " ends inside its record " + i + " of " + count +
                ", at the entry's end at " + entry.limit() + ": a cut or corrupt section", e);
        }
        if (end > entry.limit())
        {
            throw new IllegalArgumentException("the DECISIONS section at byte " + at + " has " + count + " records, which run to byte " + end +
                ", past the entry's end at " + entry.limit());
        }
        return end;
    }

    /** Bytes a classic acquire's record of this key takes. */
    public static int recordLength(final int keyLength)
    {
        return RECORD_HEADER + keyLength;
    }

    /** Bytes a classic release's record of this key takes. */
    public static int releaseRecordLength(final int keyLength)
    {
        return RECORD_HEADER + LEASE_ID_LENGTH + keyLength;
    }

    /** Most bytes a record of this key takes in either layout (room to reserve before writing one). */
    public static int maxRecordLength(final int keyLength)
    {
        return Math.max(RECORD_HEADER + LEASE_ID_LENGTH, MAX_COMPACT_RECORD_HEADER) + keyLength;
    }

    /** Writes a classic release's record at {@code at}: give back {@code cost} (at least 1) of the lease {@code leaseId}. */
    public static void putReleaseRecord(final ByteBuffer view, final byte[] bytes, final int at, final int policy, final int cost,
        final long leaseId, final long time, final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        view.putShort(at, (short)policy);
        view.putInt(at + 2, -cost);
        view.putLong(at + 6, time);
        view.putShort(at + 14, (short)keyLength);
        view.putLong(at + RECORD_HEADER, leaseId);
        key.getBytes(keyOffset, bytes, at + RECORD_HEADER + LEASE_ID_LENGTH, keyLength);
    }

    /** Writes a classic leased acquire's record at {@code at}: an acquire of {@code cost} whose grant took the lease {@code leaseId}. */
    public static void putLeasedRecord(final ByteBuffer view, final byte[] bytes, final int at, final int policy, final int cost,
        final long leaseId, final long time, final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        view.putShort(at, (short)policy);
        view.putInt(at + 2, cost);
        view.putLong(at + 6, time);
        view.putShort(at + 14, (short)(keyLength | LEASED));
        view.putLong(at + RECORD_HEADER, leaseId);
        key.getBytes(keyOffset, bytes, at + RECORD_HEADER + LEASE_ID_LENGTH, keyLength);
    }

    /** Writes one classic record at {@code at} of {@code view} (its backing array {@code bytes}): policy, cost, time, key. */
    public static void putRecord(final ByteBuffer view, final byte[] bytes, final int at, final int policy, final int cost, final long time,
        final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        view.putShort(at, (short)policy);
        view.putInt(at + 2, cost);
        view.putLong(at + 6, time);
        view.putShort(at + 14, (short)keyLength);
        key.getBytes(keyOffset, bytes, at + RECORD_HEADER, keyLength);
    }

    private static final int ACQUIRE = 0;
    private static final int LEASED_ACQUIRE = 1;
    private static final int RELEASE = 2;

    /**
     * Writes one compact record at {@code at} of {@code view} (its backing array {@code bytes}) of
     * a {@code kind}: an ACQUIRE of {@code cost} tokens, a LEASED_ACQUIRE that took {@code leaseId},
     * or a RELEASE of {@code leaseId} (which cost {@code cost}). {@code previousTime} is the time of
     * the section's record before this one, 0 for its first. Reserve {@link #maxRecordLength} first.
     *
     * @return where the next record starts
     */
    private static int putCompactRecord(final ByteBuffer view, final byte[] bytes, final int at, final int policy, final int cost,
        final int kind, final long leaseId, final long time, final long previousTime, final DirectBuffer key, final int keyOffset,
        final int keyLength)
    {
        int next = putVarint(bytes, at, policy);
        next = putVarint(bytes, next, zigzag(kind == RELEASE ? -cost : cost));
        next = putVarint(bytes, next, zigzag(time - previousTime));
        next = putVarint(bytes, next, kind == LEASED_ACQUIRE ? keyLength | LEASED : keyLength);
        if (kind != ACQUIRE)
        {
            view.putLong(next, leaseId);
            next += LEASE_ID_LENGTH;
        }
        key.getBytes(keyOffset, bytes, next, keyLength);
        return next + keyLength;
    }

    /**
     * Writes a classic section's header (at the start of {@code view}) once its records are in place:
     * {@code wallClockOffset} is what its decisions added to their time for UTC-aligned windows.
     */
    public static void putHeader(final ByteBuffer view, final int shard, final int count, final long wallClockOffset)
    {
        putHeader(view, false, shard, count, wallClockOffset);
    }

    /** Writes a section's header, of the compact or the classic layout, once its records are in place. */
    public static void putHeader(final ByteBuffer view, final boolean compact, final int shard, final int count, final long wallClockOffset)
    {
        view.put(0, compact ? COMPACT_TYPE : TYPE);
        view.putShort(1, (short)shard);
        view.putInt(3, count);
        view.putLong(7, wallClockOffset);
    }

    private static int putVarint(final byte[] bytes, final int at, final long value)
    {
        long rest = value;
        int i = at;
        while ((rest & ~0x7FL) != 0)
        {
            bytes[i++] = (byte)((rest & 0x7F) | 0x80);
            rest >>>= 7;
        }
        bytes[i++] = (byte)rest;
        return i;
    }

    /**
     * A record's key length field (the length, and {@link #LEASED}), refused (with where it was read)
     * unless a key could have that length: a prefix at least, at most the table's longest.
     */
    private static int checkKeyLengthField(final long field, final int at)
    {
        final long keyLength = field & ~(long)LEASED;
        if (keyLength < BucketKeys.PREFIX_LENGTH || keyLength > BucketTable.MAX_KEY_LENGTH)
        {
            throw new IllegalArgumentException("a DECISIONS record's key length " + keyLength + " at byte " + at + " is outside " +
                BucketKeys.PREFIX_LENGTH + ".." + BucketTable.MAX_KEY_LENGTH + ": a corrupt section");
        }
        return (int)field;
    }

    /** Reads a compact section's varints one after another from {@link #at}, refusing values no writer makes. */
    private static final class VarintReader
    {
        /** Where the next varint starts. */
        int at;

        int policy(final ByteBuffer entry)
        {
            final int start = at;
            final long policy = next(entry);
            if ((policy & ~0xFFFFL) != 0)
            {
                throw new IllegalArgumentException("a DECISIONS record's policy ordinal " + Long.toUnsignedString(policy) + " at byte " + start +
                    " is outside 0..65535: a corrupt section");
            }
            return (int)policy;
        }

        int cost(final ByteBuffer entry)
        {
            final int start = at;
            final long cost = unzigzag(next(entry));
            if (cost != (int)cost)
            {
                throw new IllegalArgumentException("a DECISIONS record's cost " + cost + " at byte " + start + " is outside an int: a corrupt section");
            }
            return (int)cost;
        }

        int keyLengthField(final ByteBuffer entry)
        {
            final int start = at;
            return checkKeyLengthField(next(entry), start);
        }

        long next(final ByteBuffer entry)
        {
            long value = 0;
            int shift = 0;
            int i = at;
            byte b;
            do
            {
                b = entry.get(i++);
                if (shift == 63 && (b & 0xFE) != 0)
                {
                    // A tenth byte may only hold bit 64 and must be the last.
                    throw new IllegalArgumentException("a varint at byte " + at + " runs past 10 bytes or 64 bits: not a compact DECISIONS section");
                }
                value |= (long)(b & 0x7F) << shift;
                shift += 7;
            }
            while (b < 0);
            at = i;
            return value;
        }
    }

    private static long zigzag(final long value)
    {
        return (value << 1) ^ (value >> 63);
    }

    private static long unzigzag(final long value)
    {
        return (value >>> 1) ^ -(value & 1);
    }
}
