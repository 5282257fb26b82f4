package dev.limiter.server.cluster;

import dev.limiter.protocol.Limit;
import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.Decision;
import dev.limiter.server.table.KeyHash;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;

/**
 * The one owner of the DECISIONS log entry: a leader's shards write its sections, every replica
 * (and a leader re-syncing its own table) replays them. An entry is one or more sections back to
 * back, one per shard batch (the shards of a Raft group share entries: {@link LogSubmitter}):
 *
 * <pre>
 * section: u8 1 | u16 shard | u32 count | i64 wall-clock offset (ns; UTC = decision time + offset)
 *               | count x (u16 policy ordinal | i32 cost | i64 decision time (ns) | u16 key length
 *                          | [i64 lease id, when cost < 0] | key)
 * </pre>
 * A record whose cost is negative gives back {@code -cost} of the lease it names (a RELEASE of a
 * concurrency limit's lease, {@link BucketTable#release}); any other record is an acquire.
 * A key starts with its policy's ordinal and version ({@link BucketKeys}): a decision is
 * replayed with the rate of the version it was made under, even when a later version was
 * applied before it. Replaying repeats exactly what the leader did (same key, policy, cost and
 * cluster time, in the same order, and the section's wall-clock offset for limits whose windows
 * are aligned to UTC), so every table fed the same entries holds the same buckets. Sections
 * written before the offset existed carry 0 there (no window policies existed then).
 */
public final class DecisionsEntry
{
    /** First byte of the entry. */
    public static final byte TYPE = 1;
    /** Bytes before the first record. */
    public static final int HEADER = 15;
    /** Bytes of an acquire's record before its key. */
    public static final int RECORD_HEADER = 16;
    /** Bytes a release's record has beyond an acquire's: the lease id, before the key. */
    public static final int LEASE_ID_LENGTH = 8;

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

        private final Decision scratch = new Decision();
        private final UnsafeBuffer keyView = new UnsafeBuffer(new byte[0]);
        private final Rates rates;
        private final int[] recordAt = new int[AHEAD];
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
            int at = start;
            if (entry.get(at) != TYPE)
            {
                throw new IllegalArgumentException("not a DECISIONS section at byte " + at + " (type " + entry.get(at) + ")");
            }
            final int shard = shard(entry, at);
            final int count = entry.getInt(at + 3);
            table.wallClockOffset(wallClockOffset(entry, at));
            at += HEADER;
            long sum = 0;
            for (int done = 0; done < count; )
            {
                final int n = Math.min(AHEAD, count - done);
                for (int k = 0; k < n; k++)
                {
                    final int keyLength = entry.getShort(at + 14) & 0xFFFF;
                    keyView.wrap(entry, keyStart(entry, at), keyLength);
                    recordAt[k] = at;
                    keyLengths[k] = keyLength;
                    hashes[k] = KeyHash.hash(keyView, 0, keyLength);
                    touched[k] = table.touchSlot(hashes[k]);
                    at = keyStart(entry, at) + keyLength;
                }
                for (int k = 0; k < n; k++)
                {
                    sum += table.touchKey(touched[k]);
                }
                for (int k = 0; k < n; k++)
                {
                    final int record = recordAt[k];
                    final int policy = entry.getShort(record) & 0xFFFF;
                    final int cost = entry.getInt(record + 2);
                    final long time = entry.getLong(record + 6);
                    final int keyLength = keyLengths[k];
                    keyView.wrap(entry, keyStart(entry, record), keyLength);
                    final long version = BucketKeys.version(keyView, 0);
                    final Limit limit = rates.rate(policy, BucketKeys.policyVersion(version), BucketKeys.limitIndex(version), shard);
                    if (cost < 0)
                    {
                        table.release(keyView, 0, keyLength, hashes[k], limit, -(long)cost, entry.getLong(record + RECORD_HEADER), time, scratch);
                    }
                    else
                    {
                        table.acquire(keyView, 0, keyLength, hashes[k], policy, limit, cost, time, scratch);
                    }
                }
                done += n;
            }
            touchedSum += sum;
            return at;
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

    /** Where the section that starts at {@code at} ends (the next one starts), read from its records' key lengths. */
    public static int sectionEnd(final ByteBuffer entry, final int at)
    {
        if (entry.get(at) != TYPE)
        {
            throw new IllegalArgumentException("not a DECISIONS section at byte " + at + " (type " + entry.get(at) + ")");
        }
        final int count = entry.getInt(at + 3);
        int end = at + HEADER;
        for (int i = 0; i < count; i++)
        {
            end = keyStart(entry, end) + (entry.getShort(end + 14) & 0xFFFF);
        }
        return end;
    }

    /** Where the key of the record at {@code record} starts (a release's lease id comes first). */
    private static int keyStart(final ByteBuffer entry, final int record)
    {
        return record + RECORD_HEADER + (entry.getInt(record + 2) < 0 ? LEASE_ID_LENGTH : 0);
    }

    /** Bytes an acquire's record of this key takes. */
    public static int recordLength(final int keyLength)
    {
        return RECORD_HEADER + keyLength;
    }

    /** Bytes a release's record of this key takes. */
    public static int releaseRecordLength(final int keyLength)
    {
        return RECORD_HEADER + LEASE_ID_LENGTH + keyLength;
    }

    /** Writes a release's record at {@code at}: give back {@code cost} (at least 1) of the lease {@code leaseId}. */
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

    /** Writes one record at {@code at} of {@code view} (its backing array {@code bytes}): policy, cost, time, key. */
    public static void putRecord(final ByteBuffer view, final byte[] bytes, final int at, final int policy, final int cost, final long time,
        final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        view.putShort(at, (short)policy);
        view.putInt(at + 2, cost);
        view.putLong(at + 6, time);
        view.putShort(at + 14, (short)keyLength);
        key.getBytes(keyOffset, bytes, at + RECORD_HEADER, keyLength);
    }

    /**
     * Writes a section's header (at the start of {@code view}) once its records are in place:
     * {@code wallClockOffset} is what its decisions added to their time for UTC-aligned windows.
     */
    public static void putHeader(final ByteBuffer view, final int shard, final int count, final long wallClockOffset)
    {
        view.put(0, TYPE);
        view.putShort(1, (short)shard);
        view.putInt(3, count);
        view.putLong(7, wallClockOffset);
    }
}
