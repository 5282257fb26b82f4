package dev.limiter.server.table;

import dev.limiter.protocol.TokenBucket;
import dev.limiter.protocol.Verdict;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * For any request sequence, the tokens granted over [0, T] never exceed burst + rate x T, and a
 * client that always asks gets exactly that (no token lost to rounding).
 */
class BucketTablePropertyTest
{
    @RepeatedTest(200)
    void grantedTokensNeverExceedBurstPlusRateTimesElapsed(final RepetitionInfo repetition)
    {
        final long seed = 0x5EEDL * repetition.getCurrentRepetition();
        final Random random = new Random(seed);
        final long rate = 1 + random.nextInt(1000);
        final long periodNanos = 1 + (long)random.nextInt(10_000) * 1_000_000L;
        final long burst = 1 + random.nextInt(500);
        final TokenBucket.Rate bucket = TokenBucket.rate(rate, periodNanos, burst);
        final BucketTable table = new BucketTable(16, 1024, o -> bucket);
        final UnsafeBuffer key = new UnsafeBuffer("k".getBytes(StandardCharsets.UTF_8));
        final long hash = KeyHash.hash(key, 0, 1);
        final Verdict verdict = new Verdict();

        final long start = random.nextLong() / 4; // any origin, negative included
        long now = start;
        long latest = start;
        long granted = 0;
        final int requests = 1 + random.nextInt(2000);
        for (int i = 0; i < requests; i++)
        {
            // Bursts of simultaneous requests, small and large gaps, occasionally time going backwards.
            final int shape = random.nextInt(10);
            final long step = shape < 4 ? 0 : shape < 8 ? random.nextInt((int)Math.min(Integer.MAX_VALUE, periodNanos)) :
                shape == 8 ? periodNanos * random.nextInt(5) : -random.nextInt(1000);
            now += step;
            latest = Math.max(latest, now);
            final long cost = 1 + random.nextInt((int)Math.min(burst + 2, 50));
            table.acquire(key, 0, 1, hash, 0, bucket, cost, now, verdict);
            if (verdict.allowed())
            {
                granted += cost;
            }
            final long bound = burst + (latest - start) * rate / periodNanos;
            assertTrue(granted <= bound, "seed " + seed + ": granted " + granted + " > bound " + bound);
        }
    }

    @RepeatedTest(50)
    void aClientThatAlwaysAsksGetsExactlyBurstPlusRateTimesElapsed(final RepetitionInfo repetition)
    {
        final Random random = new Random(repetition.getCurrentRepetition());
        final long rate = 1 + random.nextInt(100);
        final long periodNanos = 1_000_000L * (1 + random.nextInt(2000));
        final long burst = 2 + random.nextInt(100);
        final TokenBucket.Rate bucket = TokenBucket.rate(rate, periodNanos, burst);
        final BucketTable table = new BucketTable(16, 1024, o -> bucket);
        final UnsafeBuffer key = new UnsafeBuffer("k".getBytes(StandardCharsets.UTF_8));
        final long hash = KeyHash.hash(key, 0, 1);
        final Verdict verdict = new Verdict();

        long now = 0;
        long lastAsk = 0;
        long granted = 0;
        final long end = periodNanos * (1 + random.nextInt(20));
        while (now <= end)
        {
            do
            {
                table.acquire(key, 0, 1, hash, 0, bucket, 1, now, verdict);
                granted += verdict.allowed() ? 1 : 0;
            }
            while (verdict.allowed());
            lastAsk = now;
            // Ask again within one token interval, so the bucket never reaches the cap and no refill is lost.
            now += 1 + random.nextInt((int)(periodNanos / rate));
        }
        assertEquals(burst + lastAsk * rate / periodNanos, granted);
    }
}
