package dev.limiter.server.cluster;

import dev.limiter.protocol.ConcurrencyLimit;
import dev.limiter.protocol.FixedWindow;
import dev.limiter.protocol.Gcra;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.SlidingWindow;
import dev.limiter.protocol.TokenBucket;
import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.KeyHash;
import dev.limiter.protocol.Verdict;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a leader writes into a DECISIONS entry, a replica replays into the very same table. */
class DecisionsEntryTest
{
    private static final long SECOND = 1_000_000_000L;

    @RepeatedTest(20)
    void aReplicaReplayingRandomBatchesHoldsTheLeadersTable(final RepetitionInfo repetition)
    {
        // Each batch in the compact or the classic layout at random: a log may hold both after an upgrade.
        final Random random = new Random(0xDEC15L * repetition.getCurrentRepetition());
        // Every algorithm; the windows on UTC (cluster time plus each section's offset, which jitters and may step back).
        final Limit[][] rates = {
            {TokenBucket.rate(10, SECOND, 5), TokenBucket.rate(100, SECOND, 50)},
            {TokenBucket.rate(1, 60 * SECOND, 3)},
            {new FixedWindow(4, SECOND / 2), new SlidingWindow(20, SECOND)},
            {new SlidingWindow(7, 300_000_000L), new Gcra(TokenBucket.rate(3, SECOND, 4))},
            {new ConcurrencyLimit(5, SECOND)}};
        final DecisionsEntry.Rates lookup = (ordinal, version, limit, shard) -> rates[ordinal][(int)version - 1];
        final BucketTable leader = new BucketTable(50_000, 50_000 * 32, o -> rates[o][rates[o].length - 1], true);
        final BucketTable replica = new BucketTable(50_000, 50_000 * 32, o -> rates[o][rates[o].length - 1], true);
        final DecisionsEntry.Replayer replayer = new DecisionsEntry.Replayer(lookup);
        final Verdict verdict = new Verdict();
        final UnsafeBuffer key = new UnsafeBuffer(new byte[64]);
        long now = SECOND;
        final java.util.List<Object[]> leases = new java.util.ArrayList<>(); // {key bytes, ordinal, lease id, cost}: releases to come
        // One writer per layout, each reused from batch to batch as a shard's log reuses its own.
        final DecisionsEntry.SectionWriter[] writers = {new DecisionsEntry.SectionWriter(false, 64), new DecisionsEntry.SectionWriter(true, 64)};
        for (int batch = 0; batch < 30; batch++)
        {
            final DecisionsEntry.SectionWriter writer = writers[random.nextInt(2)];
            final int count = 1 + random.nextInt(500);
            final long wallClockOffset = 1_796_000_000_000_000_000L + random.nextInt(20_000_000) - 10_000_000;
            leader.wallClockOffset(wallClockOffset);
            for (int i = 0; i < count; i++)
            {
                now += random.nextInt(3) == 0 ? 0 : random.nextInt(50_000_000);
                if (!leases.isEmpty() && random.nextInt(4) == 0)
                {
                    // A release, of a lease still held or (after a second or more) expired.
                    final Object[] lease = leases.remove(random.nextInt(leases.size()));
                    final byte[] held = (byte[])lease[0];
                    key.putBytes(0, held);
                    final int ordinal = (int)lease[1];
                    // Sometimes a forged id: it frees nothing, on the leader as on the replica.
                    final long id = random.nextInt(5) == 0 ? random.nextLong() : (long)lease[2];
                    leader.releaseLease(key, 0, held.length, KeyHash.hash(key, 0, held.length), lookup.rate(ordinal, 1, 0, 0), id, now, verdict);
                    writer.appendRelease(key, 0, held.length, ordinal, (int)lease[3], id, now);
                    continue;
                }
                final int ordinal = random.nextInt(rates.length);
                final int version = 1 + random.nextInt(rates[ordinal].length);
                final byte[] tenant = ("tenant-" + random.nextInt(300)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                BucketKeys.putPrefix(key, 0, ordinal, version);
                key.putBytes(6, tenant);
                final int keyLength = 6 + tenant.length;
                final int cost = 1 + random.nextInt(6);
                final Limit limit = lookup.rate(ordinal, version, 0, 0);
                final long hash = KeyHash.hash(key, 0, keyLength);
                leader.acquire(key, 0, keyLength, hash, ordinal, limit, cost, now, verdict);
                if (verdict.allowed() && limit.leases())
                {
                    final long id = random.nextLong();
                    if (leader.takeLease(key, 0, keyLength, hash, ordinal, limit, id, limit.costUnits(cost), verdict.timeNanos(), now, verdict))
                    {
                        leases.add(new Object[] {java.util.Arrays.copyOf(key.byteArray(), keyLength), ordinal, id, cost});
                    }
                    writer.appendLeased(key, 0, keyLength, ordinal, cost, id, now);
                }
                else
                {
                    writer.append(key, 0, keyLength, ordinal, cost, now);
                }
            }
            assertEquals(count, writer.count());
            final ByteBuffer entry = writer.take(3, wallClockOffset);
            assertEquals(0, writer.count(), "the next section starts empty");
            assertEquals(3, DecisionsEntry.shard(entry));
            assertEquals(count, DecisionsEntry.count(entry));
            assertEquals(count, replayer.replay(entry, replica));
            assertEquals(entry.limit(), DecisionsEntry.sectionEnd(entry, 0), "releases are longer records");
            assertEquals(leader.trackedDigest(), replica.trackedDigest(), "after batch " + batch);
        }
        assertEquals(leader.digest(), replica.digest());
        assertEquals(leader.size(), replica.size());
    }

    @Test
    void aCompactRecordOfAOneTokenDecisionTakesSixBytesBeforeItsKeyWhereAClassicOneTakesSixteen()
    {
        final UnsafeBuffer key = new UnsafeBuffer(new byte[64]);
        BucketKeys.putPrefix(key, 0, 3, 1);
        final int keyLength = 6 + key.putStringWithoutLengthAscii(6, "tenant-12345");
        final DecisionsEntry.SectionWriter writer = new DecisionsEntry.SectionWriter(true, 256);
        final long first = 7_200 * SECOND;
        writer.append(key, 0, keyLength, 3, 1, first);
        final int second = writer.bytes();
        // 250 us after the first: policy 1 byte, cost 1, time 3 (zigzag 500,000), key length 1.
        writer.append(key, 0, keyLength, 3, 1, first + 250_000);
        final int end = writer.bytes();
        assertEquals(6 + keyLength, end - second);
        assertEquals(16 + keyLength, DecisionsEntry.recordLength(keyLength));
        assertEquals(end, DecisionsEntry.sectionEnd(writer.take(0, 0), 0));
    }

    @Test
    void anEntryOfAClassicAndACompactSectionIsWalkedAndReplayedWhole()
    {
        final DecisionsEntry.Replayer replayer = new DecisionsEntry.Replayer((o, v, l, s) -> TokenBucket.rate(1, SECOND, 10));
        final BucketTable replica = new BucketTable(100, 100 * 32, o -> TokenBucket.rate(1, SECOND, 10), true);
        final BucketTable leader = new BucketTable(100, 100 * 32, o -> TokenBucket.rate(1, SECOND, 10), true);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[64]);
        BucketKeys.putPrefix(key, 0, 0, 1);
        final int keyLength = 6 + key.putStringWithoutLengthAscii(6, "tenant-1");
        final DecisionsEntry.SectionWriter classic = new DecisionsEntry.SectionWriter(false, 512);
        final DecisionsEntry.SectionWriter compact = new DecisionsEntry.SectionWriter(true, 512);
        final Verdict verdict = new Verdict();
        for (int i = 0; i < 3; i++)
        {
            leader.acquire(key, 0, keyLength, KeyHash.hash(key, 0, keyLength), 0, TokenBucket.rate(1, SECOND, 10), 2, SECOND + i, verdict);
            classic.append(key, 0, keyLength, 0, 2, SECOND + i);
        }
        for (int i = 0; i < 3; i++)
        {
            final long time = 2 * SECOND - i; // a time may even step back within a section: deltas are signed
            leader.acquire(key, 0, keyLength, KeyHash.hash(key, 0, keyLength), 0, TokenBucket.rate(1, SECOND, 10), 1, time, verdict);
            compact.append(key, 0, keyLength, 0, 1, time);
        }
        final ByteBuffer first = classic.take(0, 0);
        final ByteBuffer second = compact.take(0, 0);
        final int compactStart = first.remaining();
        final int at = compactStart + second.remaining();
        final ByteBuffer entry = ByteBuffer.allocate(at).put(first).put(second).flip();
        assertTrue(DecisionsEntry.isDecisions(entry.get(0)) && DecisionsEntry.isDecisions(entry.get(compactStart)));
        assertEquals(compactStart, DecisionsEntry.sectionEnd(entry, 0));
        assertEquals(at, DecisionsEntry.sectionEnd(entry, compactStart));
        assertEquals(compactStart, replayer.replaySection(entry, 0, replica));
        assertEquals(at, replayer.replaySection(entry, compactStart, replica));
        assertEquals(leader.trackedDigest(), replica.trackedDigest());
    }

    @Test
    void aSectionWriterClearedOrPeekedAtStartsItsTimesAfreshAndKeepsItsPendingRecords()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(10, SECOND, 10);
        final DecisionsEntry.Replayer replayer = new DecisionsEntry.Replayer((o, v, l, s) -> rate);
        final BucketTable leader = new BucketTable(100, 100 * 32, o -> rate, true);
        final BucketTable replica = new BucketTable(100, 100 * 32, o -> rate, true);
        final BucketTable peek = new BucketTable(100, 100 * 32, o -> rate, true);
        final DecisionsEntry.SectionWriter writer = new DecisionsEntry.SectionWriter(true, 64);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[32]);
        BucketKeys.putPrefix(key, 0, 0, 1);
        final int keyLength = 6 + key.putStringWithoutLengthAscii(6, "tenant-7");
        final Verdict verdict = new Verdict();
        writer.append(key, 0, keyLength, 0, 3, 40 * SECOND); // dropped below (a new term): never applied anywhere
        writer.clear();
        for (int i = 0; i < 4; i++)
        {
            final long time = 5 * SECOND + i * 100_000_000L;
            leader.acquire(key, 0, keyLength, KeyHash.hash(key, 0, keyLength), 0, rate, 2, time, verdict);
            writer.append(key, 0, keyLength, 0, 2, time);
        }
        replayer.replay(writer.pending(0, 0), peek); // a resync replays what is still to be sent...
        assertEquals(4, writer.count(), "...and it stays pending");
        assertEquals(leader.trackedDigest(), peek.trackedDigest());
        replayer.replay(writer.take(0, 0), replica);
        assertEquals(leader.trackedDigest(), replica.trackedDigest());
    }

    @Test
    void compactRecordsKeepEdgeValuesExact()
    {
        // Ordinals that take 2 and 3 varint bytes, costs up to an int's largest, times far apart in
        // both directions, the shortest and the longest keys: the replica's table must equal the leader's.
        final TokenBucket.Rate rate = TokenBucket.rate(1_000, SECOND, Integer.MAX_VALUE);
        final DecisionsEntry.Replayer replayer = new DecisionsEntry.Replayer((o, v, l, s) -> rate);
        final BucketTable leader = new BucketTable(100, 100 * 300, o -> rate, true);
        final BucketTable replica = new BucketTable(100, 100 * 300, o -> rate, true);
        final int[] ordinals = {0, 127, 128, 300, 16_384, 65_535};
        final int[] costs = {1, 127, 128, 1 << 20, Integer.MAX_VALUE};
        final long[] times = {SECOND, Long.MAX_VALUE / 4, Long.MAX_VALUE / 4 - 1, 3 * SECOND, 3 * SECOND, Long.MAX_VALUE / 2};
        final int[] keyLengths = {BucketKeys.PREFIX_LENGTH, 7, 127, 128, BucketTable.MAX_KEY_LENGTH};
        final DecisionsEntry.SectionWriter writer = new DecisionsEntry.SectionWriter(true, 1 << 16);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[BucketTable.MAX_KEY_LENGTH]);
        final Verdict verdict = new Verdict();
        for (int i = 0; i < 30; i++)
        {
            final int ordinal = ordinals[i % ordinals.length];
            final int cost = costs[i % costs.length];
            final long time = times[i % times.length];
            final int keyLength = keyLengths[i % keyLengths.length];
            BucketKeys.putPrefix(key, 0, ordinal, 1);
            for (int b = BucketKeys.PREFIX_LENGTH; b < keyLength; b++)
            {
                key.putByte(b, (byte)('a' + (i + b) % 26));
            }
            leader.acquire(key, 0, keyLength, KeyHash.hash(key, 0, keyLength), ordinal, rate, cost, time, verdict);
            writer.append(key, 0, keyLength, ordinal, cost, time);
        }
        final ByteBuffer entry = writer.take(1, 0);
        final int at = entry.limit();
        assertEquals(at, DecisionsEntry.sectionEnd(entry, 0));
        assertEquals(at, replayer.replaySection(entry, 0, replica));
        assertEquals(leader.trackedDigest(), replica.trackedDigest());
        assertEquals(leader.size(), replica.size());
    }

    @Test
    void aCompactRecordWithANegativeOrOversizedKeyLengthIsRefusedNotLoopedOn()
    {
        // count 1: policy 0, cost 1 (zigzag 2), time 0, key length 0xFFFFFFE9 as a varint (-23 as an int).
        final byte[] negative = {DecisionsEntry.COMPACT_TYPE, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 2, 0, (byte)0xE9, (byte)0xFF, (byte)0xFF, (byte)0xFF, 0x0F};
        final byte[] oversized = {DecisionsEntry.COMPACT_TYPE, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 2, 0, (byte)0x80, 0x40};
        final DecisionsEntry.Replayer replayer = new DecisionsEntry.Replayer((o, v, l, s) -> TokenBucket.rate(1, SECOND, 1));
        final BucketTable table = new BucketTable(10, 1024, o -> TokenBucket.rate(1, SECOND, 1));
        for (final byte[] bytes : new byte[][] {negative, oversized})
        {
            final ByteBuffer entry = ByteBuffer.wrap(bytes);
            assertTrue(assertThrows(IllegalArgumentException.class, () -> DecisionsEntry.sectionEnd(entry, 0)).getMessage()
                .contains("key length"));
            assertThrows(IllegalArgumentException.class, () -> replayer.replay(entry, table));
        }
        assertEquals(0, table.size(), "the refused record is not applied");
    }

    @Test
    void aSectionWhoseRecordsRunPastTheEntryIsRefused()
    {
        final UnsafeBuffer key = new UnsafeBuffer(new byte[16]);
        BucketKeys.putPrefix(key, 0, 0, 1);
        final DecisionsEntry.SectionWriter writer = new DecisionsEntry.SectionWriter(true, 64);
        writer.append(key, 0, 10, 0, 1, SECOND);
        final byte[] bytes = writer.take(0, 0).array();
        final int end = bytes.length;
        final ByteBuffer cut = ByteBuffer.wrap(bytes, 0, end - 1).slice();
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DecisionsEntry.sectionEnd(cut, 0)).getMessage()
            .contains("past the entry's end"));
        // Cut inside a record's header, and a policy ordinal whose varint sets bit 64 (negative as a long).
        final ByteBuffer cutInHeader = ByteBuffer.wrap(bytes, 0, DecisionsEntry.HEADER + 2).slice();
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DecisionsEntry.sectionEnd(cutInHeader, 0)).getMessage()
            .contains("ends inside its record 0 of 1"));
        final byte[] negative = new byte[DecisionsEntry.HEADER + 16];
        negative[DecisionsEntry.HEADER] = (byte)0x85;
        java.util.Arrays.fill(negative, DecisionsEntry.HEADER + 1, DecisionsEntry.HEADER + 9, (byte)0x80);
        negative[DecisionsEntry.HEADER + 9] = 0x01;
        DecisionsEntry.putHeader(ByteBuffer.wrap(negative), true, 0, 1, 0);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DecisionsEntry.sectionEnd(ByteBuffer.wrap(negative), 0)).getMessage()
            .contains("outside 0..65535"));
    }

    @Test
    void aCompactSectionWithAVarintLongerThanTenBytesIsRefusedNotReadOnAndOn()
    {
        final byte[] bytes = new byte[DecisionsEntry.HEADER + 16];
        java.util.Arrays.fill(bytes, DecisionsEntry.HEADER, bytes.length, (byte)0xFF);
        DecisionsEntry.putHeader(ByteBuffer.wrap(bytes), true, 0, 1, 0);
        final ByteBuffer entry = ByteBuffer.wrap(bytes);
        final DecisionsEntry.Replayer replayer = new DecisionsEntry.Replayer((o, v, l, s) -> TokenBucket.rate(1, SECOND, 1));
        final BucketTable table = new BucketTable(10, 1024, o -> TokenBucket.rate(1, SECOND, 1));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DecisionsEntry.sectionEnd(entry, 0)).getMessage()
            .contains("runs past 10 bytes or 64 bits"));
        assertThrows(IllegalArgumentException.class, () -> replayer.replay(entry, table));
        // Ten bytes, the last one final, but carrying bits beyond the 64th.
        bytes[DecisionsEntry.HEADER + 9] = 0x02;
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DecisionsEntry.sectionEnd(entry, 0)).getMessage()
            .contains("runs past 10 bytes or 64 bits"));
    }

    @Test
    void anEntryOfAnotherTypeIsRefused()
    {
        final DecisionsEntry.Replayer replayer = new DecisionsEntry.Replayer((o, v, l, s) -> TokenBucket.rate(1, SECOND, 1));
        final BucketTable table = new BucketTable(10, 1024, o -> TokenBucket.rate(1, SECOND, 1));
        assertThrows(IllegalArgumentException.class, () -> replayer.replay(ByteBuffer.wrap(new byte[] {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), table));
    }
}
