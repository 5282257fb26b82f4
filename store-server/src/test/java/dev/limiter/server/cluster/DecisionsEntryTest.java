package dev.limiter.server.cluster;

import dev.limiter.protocol.ConcurrencyLimit;
import dev.limiter.protocol.FixedWindow;
import dev.limiter.protocol.Gcra;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.SlidingWindow;
import dev.limiter.protocol.TokenBucket;
import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.Decision;
import dev.limiter.server.table.KeyHash;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** What a leader writes into a DECISIONS entry, a replica replays into the very same table. */
class DecisionsEntryTest
{
    private static final long SECOND = 1_000_000_000L;

    @RepeatedTest(20)
    void aReplicaReplayingRandomBatchesHoldsTheLeadersTable(final RepetitionInfo repetition)
    {
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
        final Decision decision = new Decision();
        final UnsafeBuffer key = new UnsafeBuffer(new byte[64]);
        long now = SECOND;
        final java.util.List<Object[]> leases = new java.util.ArrayList<>(); // {key bytes, ordinal, lease id, cost}: releases to come
        for (int batch = 0; batch < 30; batch++)
        {
            final byte[] bytes = new byte[1 << 16];
            final ByteBuffer view = ByteBuffer.wrap(bytes);
            int at = DecisionsEntry.HEADER;
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
                    leader.release(key, 0, held.length, KeyHash.hash(key, 0, held.length), lookup.rate(ordinal, 1, 0, 0), (int)lease[3],
                        (long)lease[2], now, decision);
                    DecisionsEntry.putReleaseRecord(view, bytes, at, ordinal, (int)lease[3], (long)lease[2], now, key, 0, held.length);
                    at += DecisionsEntry.releaseRecordLength(held.length);
                    continue;
                }
                final int ordinal = random.nextInt(rates.length);
                final int version = 1 + random.nextInt(rates[ordinal].length);
                final byte[] tenant = ("tenant-" + random.nextInt(300)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                BucketKeys.putPrefix(key, 0, ordinal, version);
                key.putBytes(6, tenant);
                final int keyLength = 6 + tenant.length;
                final int cost = 1 + random.nextInt(6);
                leader.acquire(key, 0, keyLength, KeyHash.hash(key, 0, keyLength), ordinal, lookup.rate(ordinal, version, 0, 0), cost, now, decision);
                if (decision.allowed() && lookup.rate(ordinal, version, 0, 0).leases())
                {
                    leases.add(new Object[] {java.util.Arrays.copyOf(key.byteArray(), keyLength),
                        ordinal, decision.timeNanos(), cost});
                }
                DecisionsEntry.putRecord(view, bytes, at, ordinal, cost, now, key, 0, keyLength);
                at += DecisionsEntry.recordLength(keyLength);
            }
            DecisionsEntry.putHeader(view, 3, count, wallClockOffset);
            final ByteBuffer entry = ByteBuffer.wrap(bytes, 0, at).slice();
            assertEquals(3, DecisionsEntry.shard(entry));
            assertEquals(count, DecisionsEntry.count(entry));
            assertEquals(count, replayer.replay(entry, replica));
            assertEquals(at, DecisionsEntry.sectionEnd(entry, 0), "releases are longer records");
            assertEquals(leader.trackedDigest(), replica.trackedDigest(), "after batch " + batch);
        }
        assertEquals(leader.digest(), replica.digest());
        assertEquals(leader.size(), replica.size());
    }

    @Test
    void anEntryOfAnotherTypeIsRefused()
    {
        final DecisionsEntry.Replayer replayer = new DecisionsEntry.Replayer((o, v, l, s) -> TokenBucket.rate(1, SECOND, 1));
        final BucketTable table = new BucketTable(10, 1024, o -> TokenBucket.rate(1, SECOND, 1));
        assertThrows(IllegalArgumentException.class, () -> replayer.replay(ByteBuffer.wrap(new byte[] {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), table));
    }
}
