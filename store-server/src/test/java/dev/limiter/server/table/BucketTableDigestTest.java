package dev.limiter.server.table;

import dev.limiter.protocol.TokenBucket;
import dev.limiter.protocol.Verdict;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A table that tracks its digest keeps it equal to a full scan through every kind of change
 * (charges, inserts, evictions by sweep, growth, snapshot restores, copies, clears), and publishes
 * only what its owner hands over with {@code publish()}.
 */
class BucketTableDigestTest
{
    private static final long SECOND = 1_000_000_000L;

    @RepeatedTest(20)
    void trackedDigestEqualsAFullScanAfterAnySequenceOfChanges(final RepetitionInfo repetition)
    {
        final Random random = new Random(0xD16E57L * repetition.getCurrentRepetition());
        final TokenBucket.Rate rate = TokenBucket.rate(1 + random.nextInt(50), SECOND, 1 + random.nextInt(20));
        // Small enough that sweeps evict and the arena fills; large enough to grow past the initial slots.
        final int maxBuckets = 20_000 + random.nextInt(20_000);
        final BucketTable table = new BucketTable(maxBuckets, maxBuckets * 24, o -> rate, true);
        final Verdict verdict = new Verdict();
        long now = random.nextInt(1000) * SECOND;
        for (int i = 0; i < 60_000; i++)
        {
            now += random.nextInt(4) == 0 ? random.nextInt((int)SECOND) : random.nextInt(10_000);
            final UnsafeBuffer key = key("tenant-" + random.nextInt(maxBuckets * 2));
            final int cost = 1 + random.nextInt(rate.burstTokens() > 1 ? (int)rate.burstTokens() + 1 : 2);
            table.acquire(key, 0, key.capacity(), KeyHash.hash(key, 0, key.capacity()), 0, rate, cost, now, verdict);
            if (i % 5_000 == 0)
            {
                assertEquals(table.digest(), table.trackedDigest(), "after " + i + " decisions");
            }
            if (i % 17_000 == 16_999)
            {
                final UnsafeBuffer restored = key("restored-" + i);
                table.restore(restored, 0, restored.capacity(), 0, rate.burstUnits() / 2, now);
            }
        }
        assertEquals(table.digest(), table.trackedDigest());

        final BucketTable copy = new BucketTable(maxBuckets, maxBuckets * 24, o -> rate, true);
        copy.copyFrom(table);
        assertEquals(table.trackedDigest(), copy.trackedDigest());
        final BucketTable untrackedCopy = new BucketTable(maxBuckets, maxBuckets * 24, o -> rate);
        untrackedCopy.copyFrom(table);
        final BucketTable fromUntracked = new BucketTable(maxBuckets, maxBuckets * 24, o -> rate, true);
        fromUntracked.copyFrom(untrackedCopy);
        assertEquals(table.digest(), fromUntracked.trackedDigest(), "a copy of an untracked table computes its digest");

        copy.clear();
        assertEquals(0, copy.trackedDigest());
        assertEquals(copy.digest(), copy.trackedDigest());
    }

    @Test
    void otherThreadsSeeOnlyWhatTheOwnerPublished()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(10, SECOND, 5);
        final BucketTable table = new BucketTable(1000, 64_000, o -> rate, true);
        final Verdict verdict = new Verdict();
        for (int i = 0; i < 10; i++)
        {
            final UnsafeBuffer key = key("k" + i);
            table.acquire(key, 0, key.capacity(), KeyHash.hash(key, 0, key.capacity()), 0, rate, 1, SECOND, verdict);
        }
        assertEquals(10, table.size());
        assertEquals(0, table.publishedSize(), "nothing published yet");
        assertEquals(0, table.publishedDigest());
        table.publish();
        assertEquals(10, table.publishedSize());
        assertEquals(table.digest(), table.publishedDigest());
        assertEquals(table.reservedBytes(), table.publishedReservedBytes());
    }

    @Test
    void anUntrackedTableRefusesToReportATrackedDigest()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(10, SECOND, 5);
        final BucketTable table = new BucketTable(1000, 64_000, o -> rate);
        assertThrows(IllegalStateException.class, table::trackedDigest);
    }

    private static UnsafeBuffer key(final String text)
    {
        return new UnsafeBuffer(text.getBytes(StandardCharsets.UTF_8));
    }
}
