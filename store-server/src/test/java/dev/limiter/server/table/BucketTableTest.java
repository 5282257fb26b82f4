package dev.limiter.server.table;

import dev.limiter.protocol.ConcurrencyLimit;
import dev.limiter.protocol.ExcessLimit;
import dev.limiter.protocol.FixedWindow;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.TokenBucket;
import dev.limiter.protocol.Verdict;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BucketTableTest
{
    private static final long SECOND = 1_000_000_000L;
    private static final long T0 = 5 * SECOND;

    private final TokenBucket.Rate tenPerSecondBurstFive = TokenBucket.rate(10, SECOND, 5);
    private final Verdict verdict = new Verdict();

    private static UnsafeBuffer key(final String text)
    {
        return new UnsafeBuffer(text.getBytes(StandardCharsets.UTF_8));
    }

    private boolean acquire(final BucketTable table, final String key, final Limit rate, final long cost, final long now)
    {
        final UnsafeBuffer k = key(key);
        table.acquire(k, 0, k.capacity(), KeyHash.hash(k, 0, k.capacity()), 0, rate, cost, now, verdict);
        return verdict.allowed();
    }

    private BucketTable table(final int maxBuckets, final Limit rate)
    {
        return new BucketTable(maxBuckets, maxBuckets * 64, ordinal -> rate);
    }

    @Test
    void shouldStartFullAndAllowExactlyTheBurst()
    {
        final BucketTable table = table(100, tenPerSecondBurstFive);
        for (int i = 0; i < 5; i++)
        {
            assertTrue(acquire(table, "a", tenPerSecondBurstFive, 1, T0), "token " + i);
            assertEquals(4 - i, verdict.remainingTokens());
        }
        assertFalse(acquire(table, "a", tenPerSecondBurstFive, 1, T0));
        assertEquals(ReasonCode.RATE_LIMITED, verdict.reason());
        assertEquals(SECOND / 10, verdict.retryAfterNanos(), "exactly one token interval");
        assertEquals(SECOND / 2, verdict.resetAfterNanos(), "five tokens to refill");
    }

    /** A bucket key as the engine writes one: policy 0, version 1, then the tenant. */
    private static UnsafeBuffer limitKey(final String tenant)
    {
        final byte[] bytes = tenant.getBytes(StandardCharsets.UTF_8);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[BucketKeys.PREFIX_LENGTH + bytes.length]);
        BucketKeys.putPrefix(key, 0, 0, 1);
        key.putBytes(BucketKeys.PREFIX_LENGTH, bytes);
        return key;
    }

    /** An acquire and, when granted, the lease {@code leaseId} taken on it; whether a lease is held. */
    private boolean grant(final BucketTable table, final UnsafeBuffer key, final Limit limit, final long cost, final long leaseId,
        final long now)
    {
        final long hash = KeyHash.hash(key, 0, key.capacity());
        table.acquire(key, 0, key.capacity(), hash, 0, limit, cost, now, verdict);
        return verdict.allowed() && table.takeLease(key, 0, key.capacity(), hash, 0, limit, leaseId, limit.costUnits(cost),
            verdict.timeNanos(), now, verdict);
    }

    private BucketTable.LeaseRelease giveBack(final BucketTable table, final UnsafeBuffer key, final Limit limit, final long leaseId,
        final long now)
    {
        return table.releaseLease(key, 0, key.capacity(), KeyHash.hash(key, 0, key.capacity()), limit, leaseId, now, verdict);
    }

    @Test
    void aLeaseIsFreedOnlyByItsOwnIdOnceAndAtTheCostItTook()
    {
        final ConcurrencyLimit three = new ConcurrencyLimit(3, 30 * SECOND);
        final BucketTable table = table(100, three);
        final UnsafeBuffer a = limitKey("a");
        final UnsafeBuffer b = limitKey("b");
        assertTrue(grant(table, a, three, 2, 0x5EC2E7L, T0));
        assertEquals(1, verdict.remainingTokens());
        assertTrue(grant(table, b, three, 1, 0xB0B1L, T0 + 1));
        assertEquals(BucketTable.LeaseRelease.UNKNOWN, giveBack(table, a, three, 0x5EC2E7L + 1, T0 + 2), "a forged id");
        assertEquals(1, verdict.remainingTokens(), "frees nothing");
        assertEquals(BucketTable.LeaseRelease.UNKNOWN, giveBack(table, a, three, 0xB0B1L, T0 + 3), "another key's id");
        assertEquals(1, verdict.remainingTokens());
        assertFalse(grant(table, a, three, 2, 0xA2L, T0 + 4), "still two held on a");
        assertEquals(BucketTable.LeaseRelease.FREED, giveBack(table, a, three, 0x5EC2E7L, T0 + 5));
        assertEquals(ReasonCode.RELEASED, verdict.reason());
        assertEquals(3, verdict.remainingTokens(), "both tokens of that lease, whatever a caller would say it cost");
        assertEquals(BucketTable.LeaseRelease.UNKNOWN, giveBack(table, a, three, 0x5EC2E7L, T0 + 6), "given back already");
        assertEquals(3, verdict.remainingTokens());
        assertEquals(BucketTable.LeaseRelease.FREED, giveBack(table, b, three, 0xB0B1L, T0 + 7));
        assertEquals(2, table.sweep(T0 + 8, table.slotCount()), "keys whose leases are all back are forgotten, records gone with them");
        assertEquals(0, table.size());
        assertEquals(BucketTable.LeaseRelease.UNKNOWN, giveBack(table, limitKey("never-seen"), three, 1, T0 + 9));
        assertEquals(0, table.size(), "a release stores nothing");
        final UnsafeBuffer rated = limitKey("rated");
        table.releaseLease(rated, 0, rated.capacity(), KeyHash.hash(rated, 0, rated.capacity()), tenPerSecondBurstFive, 1, T0 + 9, verdict);
        assertEquals(ReasonCode.RELEASED, verdict.reason(), "a rate limit takes no leases: a release changes nothing");
    }

    @Test
    void anExpiredLeaseFreesNothingMoreAndItsRecordIsSweptWithItsKey()
    {
        final ConcurrencyLimit one = new ConcurrencyLimit(1, 3 * SECOND);
        final BucketTable table = table(100, one);
        final UnsafeBuffer a = limitKey("a");
        assertTrue(grant(table, a, one, 1, 42, T0));
        assertEquals(2, table.size(), "the key and its lease's record");
        final long expired = T0 + one.nanosUntilExpiry(T0, T0);
        assertEquals(0, table.sweep(expired - 1, table.slotCount()), "held until it expires");
        assertEquals(BucketTable.LeaseRelease.EXPIRED, giveBack(table, a, one, 42, expired));
        assertEquals(1, table.size(), "its record went");
        assertTrue(grant(table, a, one, 1, 43, expired));
        assertEquals(2, table.sweep(expired + one.nanosUntilExpiry(expired, expired), table.slotCount()),
            "a lease never given back: its record and its key go when it expires");
    }

    @Test
    void aGrantWhoseLeaseRecordFindsNoRoomIsGivenBackAndRefused()
    {
        final ConcurrencyLimit three = new ConcurrencyLimit(3, 30 * SECOND);
        final BucketTable table = new BucketTable(1, 4096, ordinal -> three);
        final UnsafeBuffer a = limitKey("a");
        assertFalse(grant(table, a, three, 1, 7, T0));
        assertEquals(ReasonCode.STORE_FULL, verdict.reason());
        assertEquals(1, table.storeFullRejections());
        assertEquals(BucketTable.LeaseRelease.UNKNOWN, giveBack(table, a, three, 7, T0 + 1));
        assertEquals(3, verdict.remainingTokens(), "no lease counts that no release could name");
    }

    @Test
    void aSoftOverageAllowsItsShareBeyondTheLimitTellsSoAndIsPaidBackFirst()
    {
        final Limit soft = ExcessLimit.softOverage(TokenBucket.rate(10, SECOND, 10), 20);
        final BucketTable table = table(100, soft);
        for (int i = 0; i < 10; i++)
        {
            assertTrue(acquire(table, "a", soft, 1, T0));
            assertEquals(ReasonCode.ALLOWED, verdict.reason());
        }
        for (int i = 0; i < 2; i++)
        {
            assertTrue(acquire(table, "a", soft, 1, T0), "20% of a burst of 10 beyond it");
            assertEquals(ReasonCode.SOFT_OVERAGE, verdict.reason());
            assertEquals(0, verdict.remainingTokens());
        }
        assertFalse(acquire(table, "a", soft, 1, T0));
        assertEquals(ReasonCode.RATE_LIMITED, verdict.reason());
        assertEquals(SECOND / 10, verdict.retryAfterNanos(), "one token more brings it back within the overage");
        assertEquals(12 * SECOND / 10, verdict.resetAfterNanos(), "the overage is paid back before the bucket is full");
        assertTrue(acquire(table, "a", soft, 1, T0 + SECOND / 10));
        assertEquals(ReasonCode.SOFT_OVERAGE, verdict.reason(), "still beyond the limit: the overage is paid back first");
        assertTrue(acquire(table, "a", soft, 3, T0 + SECOND / 10 + 5 * SECOND / 10));
        assertEquals(ReasonCode.ALLOWED, verdict.reason(), "paid back (2) and 3 more: within the limit again");

        final Limit window = ExcessLimit.softOverage(new FixedWindow(100, SECOND), 10);
        final BucketTable windows = table(100, window);
        int allowed = 0;
        int overage = 0;
        for (int i = 0; i < 200; i++)
        {
            allowed += acquire(windows, "w", window, 1, T0 + i) ? 1 : 0;
            overage += verdict.reason() == ReasonCode.SOFT_OVERAGE ? 1 : 0;
        }
        assertEquals(110, allowed, "a window of 100 with 10% soft overage");
        assertEquals(10, overage);
    }

    @Test
    void aWaitPolicyReservesTokensThatExistWithinItsLongestWaitInTurn()
    {
        final Limit waiting = ExcessLimit.waiting(TokenBucket.rate(10, SECOND, 2), SECOND / 2);
        final BucketTable table = table(100, waiting);
        assertTrue(acquire(table, "a", waiting, 1, T0));
        assertTrue(acquire(table, "a", waiting, 1, T0));
        for (int i = 1; i <= 5; i++)
        {
            assertTrue(acquire(table, "a", waiting, 1, T0), "reservation " + i);
            assertEquals(ReasonCode.RESERVED, verdict.reason());
            assertEquals(i * SECOND / 10, verdict.retryAfterNanos(), "each caller waits behind the ones before it");
        }
        assertFalse(acquire(table, "a", waiting, 1, T0), "600 ms is beyond the longest wait");
        assertEquals(ReasonCode.RATE_LIMITED, verdict.reason());
        assertEquals(SECOND / 10, verdict.retryAfterNanos(), "its tokens exist in 600 ms: a retry is reserved 100 ms from now");
        assertFalse(acquire(table, "a", waiting, 1, T0 + SECOND / 10 - 1), "not a nanosecond earlier");
        assertTrue(acquire(table, "a", waiting, 1, T0 + SECOND / 10));
        assertEquals(ReasonCode.RESERVED, verdict.reason());
        assertEquals(5 * SECOND / 10, verdict.retryAfterNanos(), "a refusal reserved nothing");
    }

    @Test
    void belowAReservesFloorAWaitPolicyReservesNothingSoTheReserveStaysForHigherPriorities()
    {
        final Limit waiting = ExcessLimit.waiting(TokenBucket.rate(10, SECOND, 10), SECOND);
        final BucketTable table = table(100, waiting);
        final UnsafeBuffer k = key("shared");
        final long hash = KeyHash.hash(k, 0, k.capacity());
        assertTrue(acquire(table, "shared", waiting, 5, T0));
        // 5 left, a floor of 5: a lower-priority request of 1 would dip into the reserve now.
        assertFalse(table.peek(k, 0, k.capacity(), hash, waiting, 1, waiting.costUnits(5), T0, verdict));
        assertEquals(ReasonCode.RATE_LIMITED, verdict.reason());
        assertEquals(SECOND / 10, verdict.retryAfterNanos(), "when one token above the floor exists");
        assertTrue(table.peek(k, 0, k.capacity(), hash, waiting, 6, 0, T0, verdict), "without a floor it reserves");
        assertEquals(ReasonCode.RESERVED, verdict.reason());
    }

    @Test
    void reservationsNeverLetCallersProceedFasterThanTheRate()
    {
        final java.util.SplittableRandom random = new java.util.SplittableRandom(21);
        for (int round = 0; round < 50; round++)
        {
            final long rate = 1 + random.nextInt(50);
            final long burst = 1 + random.nextInt(10);
            final TokenBucket.Rate bucket = TokenBucket.rate(rate, SECOND, burst);
            final Limit waiting = ExcessLimit.waiting(random.nextBoolean() ? bucket : new dev.limiter.protocol.Gcra(bucket),
                1 + random.nextLong(2 * SECOND));
            final BucketTable table = table(100, waiting);
            final java.util.List<Long> proceedAt = new java.util.ArrayList<>();
            long now = T0;
            for (int i = 0; i < 400; i++)
            {
                now += random.nextLong(2 * SECOND / rate + 1) / 2;
                final long cost = 1 + random.nextInt((int)burst);
                if (acquire(table, "k", waiting, cost, now))
                {
                    for (long c = 0; c < cost; c++)
                    {
                        proceedAt.add(now + verdict.retryAfterNanos());
                    }
                }
            }
            java.util.Collections.sort(proceedAt);
            for (int i = 0; i < proceedAt.size(); i++)
            {
                for (int j = i; j < proceedAt.size(); j++)
                {
                    // Tokens used within [t_i, t_j]: at most the burst plus what the rate adds in between.
                    final long interval = proceedAt.get(j) - proceedAt.get(i);
                    assertTrue(j - i + 1 <= burst + Math.floorDiv(interval * rate, SECOND) + 1,
                        "round " + round + ": " + (j - i + 1) + " tokens in " + interval + " ns at " + rate + "/s, burst " + burst);
                }
            }
        }
    }

    @Test
    void shouldRefillAtTheRateAndNeverAboveTheBurst()
    {
        final BucketTable table = table(100, tenPerSecondBurstFive);
        assertTrue(acquire(table, "a", tenPerSecondBurstFive, 5, T0));
        assertFalse(acquire(table, "a", tenPerSecondBurstFive, 1, T0 + SECOND / 10 - 1));
        assertTrue(acquire(table, "a", tenPerSecondBurstFive, 1, T0 + SECOND / 10));
        assertFalse(acquire(table, "a", tenPerSecondBurstFive, 6, T0 + 100 * SECOND), "long idle still caps at burst");
        assertEquals(ReasonCode.COST_EXCEEDS_BURST, verdict.reason());
        assertTrue(acquire(table, "a", tenPerSecondBurstFive, 5, T0 + 100 * SECOND));
        assertFalse(acquire(table, "a", tenPerSecondBurstFive, 1, T0 + 100 * SECOND));
    }

    @Test
    void retryAfterShouldBeExact()
    {
        final TokenBucket.Rate threePerSevenSeconds = TokenBucket.rate(3, 7 * SECOND, 4);
        final BucketTable table = table(100, threePerSevenSeconds);
        assertTrue(acquire(table, "k", threePerSevenSeconds, 4, T0));
        assertFalse(acquire(table, "k", threePerSevenSeconds, 2, T0 + SECOND));
        final long retryAt = T0 + SECOND + verdict.retryAfterNanos();
        assertFalse(acquire(table, "k", threePerSevenSeconds, 2, retryAt - 1), "one nanosecond early");
        assertTrue(acquire(table, "k", threePerSevenSeconds, 2, retryAt), "exactly at retry-after");
    }

    @Test
    void shouldClampTimeGoingBackwardsAndNeverRewindTheBucket()
    {
        final BucketTable table = table(100, tenPerSecondBurstFive);
        assertTrue(acquire(table, "a", tenPerSecondBurstFive, 5, T0));
        assertFalse(acquire(table, "a", tenPerSecondBurstFive, 1, T0 - SECOND), "earlier time refills nothing");
        assertFalse(acquire(table, "a", tenPerSecondBurstFive, 1, T0 + SECOND / 20), "and does not move the stamp back");
        assertTrue(acquire(table, "a", tenPerSecondBurstFive, 1, T0 + SECOND / 10));
    }

    @Test
    void shouldNeverAllowACostAboveTheBurstNorChangeState()
    {
        final BucketTable table = table(100, tenPerSecondBurstFive);
        assertFalse(acquire(table, "a", tenPerSecondBurstFive, 6, T0));
        assertEquals(ReasonCode.COST_EXCEEDS_BURST, verdict.reason());
        assertEquals(ResultCodec.NEVER, verdict.retryAfterNanos());
        assertEquals(5, verdict.remainingTokens());
        assertEquals(0, table.size(), "a full bucket is not stored");
    }

    @Test
    void shouldKeepBucketsApartWhenTheirHashesCollide()
    {
        final BucketTable table = table(100, tenPerSecondBurstFive);
        final UnsafeBuffer a = key("tenant-a");
        final UnsafeBuffer b = key("tenant-b");
        final long sameHash = 42;
        table.acquire(a, 0, a.capacity(), sameHash, 0, tenPerSecondBurstFive, 5, T0, verdict);
        assertTrue(verdict.allowed());
        table.acquire(b, 0, b.capacity(), sameHash, 0, tenPerSecondBurstFive, 5, T0, verdict);
        assertTrue(verdict.allowed(), "b has its own bucket despite the equal hash");
        table.acquire(a, 0, a.capacity(), sameHash, 0, tenPerSecondBurstFive, 1, T0, verdict);
        assertFalse(verdict.allowed());
        assertEquals(2, table.size());
    }

    @Test
    void shouldEvictRefilledBucketsDeterministicallyWhenFull()
    {
        final BucketTable table = table(4, tenPerSecondBurstFive);
        for (int i = 0; i < 4; i++)
        {
            assertTrue(acquire(table, "k" + i, tenPerSecondBurstFive, 1, T0));
        }
        assertEquals(4, table.size());
        assertFalse(acquire(table, "k4", tenPerSecondBurstFive, 1, T0), "full table, nothing refilled yet");
        assertEquals(ReasonCode.STORE_FULL, verdict.reason());
        assertEquals(1, table.storeFullRejections());
        // A tenth of a second later every bucket is full again, so they can go.
        assertTrue(acquire(table, "k4", tenPerSecondBurstFive, 1, T0 + SECOND / 10));
        assertEquals(1, table.size(), "the four refilled buckets were evicted");
        assertEquals(4, table.evictions());
    }

    @Test
    void shouldSurviveChurnWithLinearProbingAndBackwardShiftDeletion()
    {
        final BucketTable table = table(1000, tenPerSecondBurstFive);
        long now = T0;
        for (int round = 0; round < 50; round++)
        {
            for (int i = 0; i < 1000; i++)
            {
                assertTrue(acquire(table, "round" + round + "-key" + i, tenPerSecondBurstFive, 5, now), "round " + round);
            }
            // Every key of this round is still drained.
            for (int i = 0; i < 1000; i += 97)
            {
                assertFalse(acquire(table, "round" + round + "-key" + i, tenPerSecondBurstFive, 1, now));
            }
            now += SECOND;
        }
        assertEquals(1000, table.size());
        assertTrue(table.keyBytesInUse() <= 1000 * 32L);
    }

    @Test
    void shouldServeSmallKeysFromLargerFreeChunksWhenTheArenaIsOtherwiseUsedUp()
    {
        // Arena of exactly 4 x 64 bytes: fill it with long keys, let them refill, then only short keys arrive.
        final BucketTable table = new BucketTable(8, 256, ordinal -> tenPerSecondBurstFive);
        for (int i = 0; i < 4; i++)
        {
            assertTrue(acquire(table, "a-long-key-that-needs-a-64-byte-chunk-" + i + "-".repeat(10), tenPerSecondBurstFive, 1, T0));
        }
        assertFalse(acquire(table, "short", tenPerSecondBurstFive, 1, T0), "no room yet");
        assertEquals(ReasonCode.STORE_FULL, verdict.reason());
        for (int i = 0; i < 4; i++)
        {
            // Later: the long keys have refilled and are swept; short keys reuse their 64-byte chunks.
            assertTrue(acquire(table, "s" + i, tenPerSecondBurstFive, 1, T0 + SECOND), "short key " + i);
        }
        assertEquals(4, table.size());
        assertFalse(acquire(table, "s4", tenPerSecondBurstFive, 1, T0 + SECOND), "every chunk is in use again");
    }

    @Test
    void shouldRejectImpossibleSizes()
    {
        assertThrows(IllegalArgumentException.class, () -> new BucketTable(0, 1024, o -> tenPerSecondBurstFive));
        assertThrows(IllegalArgumentException.class, () -> new BucketTable(BucketTable.MAX_BUCKETS + 1, 1024, o -> tenPerSecondBurstFive));
        assertThrows(IllegalArgumentException.class, () -> new BucketTable(10, 10, o -> tenPerSecondBurstFive));
    }

    @Test
    void shouldUseThirtyTwoBytesOfStatePerSlotAndStartSmall()
    {
        final BucketTable table = table(734_003, tenPerSecondBurstFive);
        assertEquals(1 << 20, table.maxSlotCount());
        assertEquals(BucketTable.INITIAL_SLOTS, table.slotCount(), "slots are allocated as buckets arrive");
        assertEquals(32, BucketTable.SLOT_LENGTH);
    }

    @Test
    void shouldKeepEveryBucketAndItsTokensWhileGrowing()
    {
        final int keys = 50_000;
        final BucketTable table = table(100_000, tenPerSecondBurstFive);
        for (int i = 0; i < keys; i++)
        {
            assertTrue(acquire(table, "user-" + i, tenPerSecondBurstFive, 1 + i % 5, T0));
        }
        assertEquals(keys, table.size());
        assertEquals(1 << 17, table.slotCount(), "doubled from 2^14 while staying under the load factor");
        for (int i = 0; i < keys; i++)
        {
            final UnsafeBuffer k = key("user-" + i);
            final long expectedUnits = (5 - (1 + i % 5)) * tenPerSecondBurstFive.unitsPerToken();
            assertEquals(expectedUnits, table.storedUnits(k, 0, k.capacity()), "user-" + i);
        }
    }

    @Test
    void shouldNeverGrowPastTheSlotsMaxBucketsNeeds()
    {
        final BucketTable table = table(20_000, tenPerSecondBurstFive);
        for (int i = 0; i < 20_000; i++)
        {
            assertTrue(acquire(table, "k" + i, tenPerSecondBurstFive, 5, T0));
        }
        assertEquals(table.maxSlotCount(), table.slotCount());
        assertFalse(acquire(table, "one-more", tenPerSecondBurstFive, 1, T0), "full, nothing refilled");
        assertEquals(ReasonCode.STORE_FULL, verdict.reason());
        assertTrue(acquire(table, "one-more", tenPerSecondBurstFive, 1, T0 + SECOND), "refilled buckets make room");
        assertEquals(table.maxSlotCount(), table.slotCount());
    }

    @Test
    void shouldLayOutIdenticallyOnTablesFedTheSameOperations()
    {
        final BucketTable a = table(100_000, tenPerSecondBurstFive);
        final BucketTable b = table(100_000, tenPerSecondBurstFive);
        long now = T0;
        for (int i = 0; i < 30_000; i++)
        {
            now += 1_000;
            acquire(a, "k" + (i * 7 % 40_000), tenPerSecondBurstFive, 1, now);
            acquire(b, "k" + (i * 7 % 40_000), tenPerSecondBurstFive, 1, now);
        }
        assertEquals(a.slotCount(), b.slotCount());
        assertEquals(a.digest(), b.digest());
        final StringBuilder orderA = new StringBuilder();
        final StringBuilder orderB = new StringBuilder();
        a.forEach((buffer, offset, length, policy, tokens, last) -> orderA.append(buffer.getStringWithoutLengthAscii(offset, length)).append(','));
        b.forEach((buffer, offset, length, policy, tokens, last) -> orderB.append(buffer.getStringWithoutLengthAscii(offset, length)).append(','));
        assertEquals(orderA.toString(), orderB.toString(), "same slot order");
    }

    @Test
    void anImageVisitsTheBucketsAsTheyWereWhenItWasMadeWhateverTheTableDoesAfter()
    {
        final BucketTable table = table(100_000, tenPerSecondBurstFive);
        for (int i = 0; i < 20_000; i++)
        {
            acquire(table, "k" + i, tenPerSecondBurstFive, 1 + i % 5, T0);
        }
        final StringBuilder atImage = new StringBuilder();
        table.forEach((buffer, offset, length, policy, tokens, last) ->
            atImage.append(buffer.getStringWithoutLengthAscii(offset, length)).append('=').append(tokens).append('@').append(last).append(','));
        final StringBuilder fromImage = new StringBuilder();
        try (BucketTableImage image = table.image())
        {
            // The table takes more tokens, grows (new keys past its load factor) and reuses key memory.
            for (int i = 0; i < 60_000; i++)
            {
                acquire(table, "later-" + i, tenPerSecondBurstFive, 1, T0 + SECOND);
                acquire(table, "k" + (i % 20_000), tenPerSecondBurstFive, 1, T0 + SECOND);
            }
            assertEquals(20_000, image.size());
            image.forEach((buffer, offset, length, policy, tokens, last) ->
                fromImage.append(buffer.getStringWithoutLengthAscii(offset, length)).append('=').append(tokens).append('@').append(last).append(','));
            assertEquals(atImage.toString(), fromImage.toString(), "same buckets, tokens, times and slot order as at the image");
            image.close();
            assertThrows(IllegalStateException.class, () -> image.forEach((b, o, l, p, t, n) -> { }), "closed: its memory is freed");
        }
    }

    @Test
    void shouldCopyFromATableOfAnotherCurrentSizeAndShrinkOnClear()
    {
        final BucketTable big = table(100_000, tenPerSecondBurstFive);
        for (int i = 0; i < 40_000; i++)
        {
            acquire(big, "k" + i, tenPerSecondBurstFive, 2, T0);
        }
        final BucketTable copy = table(100_000, tenPerSecondBurstFive);
        copy.copyFrom(big);
        assertEquals(big.slotCount(), copy.slotCount());
        assertEquals(big.digest(), copy.digest());
        assertFalse(acquire(copy, "k123", tenPerSecondBurstFive, 4, T0), "the copy holds the drained bucket");
        copy.clear();
        assertEquals(0, copy.size());
        assertEquals(BucketTable.INITIAL_SLOTS, copy.slotCount());
        assertTrue(acquire(copy, "k123", tenPerSecondBurstFive, 5, T0));
        assertThrows(IllegalArgumentException.class, () -> copy.copyFrom(table(50_000, tenPerSecondBurstFive)));
    }
    @Test
    void touchingAKeyReadsItsHomeSlotAndStoredBytesAndChangesNothing()
    {
        final BucketTable table = new BucketTable(100, 100 * 64, ordinal -> tenPerSecondBurstFive, true);
        assertTrue(acquire(table, "stored", tenPerSecondBurstFive, 1, T0));
        final long digest = table.trackedDigest();
        final UnsafeBuffer stored = key("stored");
        final long hash = KeyHash.hash(stored, 0, stored.capacity());
        assertEquals('s', table.touchKey(table.touchSlot(hash)), "the stored key's first byte, read through its home slot");
        final UnsafeBuffer absent = key("absent");
        assertEquals(-1, table.touchSlot(KeyHash.hash(absent, 0, absent.capacity())), "no stored key there: nothing more to touch");
        assertEquals(0, table.touchKey(-1));
        assertEquals(digest, table.trackedDigest());
        assertTrue(acquire(table, "stored", tenPerSecondBurstFive, 1, T0));
        assertEquals(3, verdict.remainingTokens(), "the bucket is where it was: 5 - 2");
    }
}
