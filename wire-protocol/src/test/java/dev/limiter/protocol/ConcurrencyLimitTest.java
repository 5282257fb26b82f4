package dev.limiter.protocol;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Concurrency limits against a reference model that keeps every lease as an object with its own
 * expiry: for the same acquires, releases and times, the same grants, retry-after and free count,
 * driven the way the table drives a {@link Limit} (refill from the stored time, then act, store).
 */
class ConcurrencyLimitTest
{
    private static final long SECOND = 1_000_000_000L;

    /** A key as the table keeps it. */
    private static final class Key
    {
        long state;
        long last;

        Key(final Limit limit, final long now)
        {
            state = limit.fullState();
            last = now;
        }

        long now(final Limit limit, final long time)
        {
            final long now = Math.max(last, time);
            state = limit.refill(state, last, now);
            last = now;
            return now;
        }

        /** {granted 0/1, retry-after ns, lease id} */
        long[] take(final Limit limit, final long cost, final long time)
        {
            final long now = now(limit, time);
            if (limit.available(state, now) >= cost)
            {
                state = limit.charge(state, cost);
                return new long[] {1, 0, now};
            }
            return new long[] {0, limit.nanosUntil(state, cost, now), 0};
        }

        void release(final Limit limit, final long leaseId, final long cost, final long time)
        {
            final long now = now(limit, time);
            state = limit.release(state, now, leaseId, cost);
        }
    }

    /** Every live lease as an object: granted at, expires at, cost. */
    private static final class Model
    {
        final long max;
        final long granule;
        final List<long[]> leases = new ArrayList<>();

        Model(final long max, final long ttl)
        {
            this.max = max;
            this.granule = (ttl + 2) / 3;
        }

        void expire(final long now)
        {
            leases.removeIf(l -> l[1] <= now);
        }

        long held(final long now)
        {
            expire(now);
            return leases.stream().mapToLong(l -> l[2]).sum();
        }

        long[] take(final long cost, final long now)
        {
            final long held = held(now);
            if (held + cost <= max)
            {
                // A lease lives to the end of the third granule after the one it was granted in.
                leases.add(new long[] {now, (Math.floorDiv(now, granule) + 4) * granule, cost});
                return new long[] {1, 0};
            }
            final List<long[]> byExpiry = new ArrayList<>(leases);
            byExpiry.sort(Comparator.comparingLong(l -> l[1]));
            long free = max - held;
            for (final long[] lease : byExpiry)
            {
                free += lease[2];
                if (free >= cost)
                {
                    return new long[] {0, lease[1] - now};
                }
            }
            throw new AssertionError("cost above max");
        }

        /** Gives back {@code cost} of leases granted in the same granule as {@code leaseId} (they are alike). */
        void release(final long leaseId, final long cost, final long now)
        {
            expire(now);
            long left = cost;
            for (final long[] lease : leases)
            {
                if (left > 0 && Math.floorDiv(lease[0], granule) == Math.floorDiv(leaseId, granule))
                {
                    final long taken = Math.min(left, lease[2]);
                    lease[2] -= taken;
                    left -= taken;
                }
            }
            leases.removeIf(l -> l[2] == 0);
        }
    }

    @Test
    void grantsRetryAfterAndReleasesMatchAModelOfLeaseObjects()
    {
        final SplittableRandom random = new SplittableRandom(29);
        for (int run = 0; run < 300; run++)
        {
            final long max = 1 + random.nextInt(run % 3 == 0 ? 5 : 200);
            final long ttl = SECOND + random.nextLong(60 * SECOND);
            final ConcurrencyLimit limit = new ConcurrencyLimit(max, ttl);
            final Model model = new Model(max, ttl);
            long time = random.nextLong(-1_000 * SECOND, 1_000 * SECOND);
            final Key key = new Key(limit, time);
            final List<long[]> held = new ArrayList<>(); // {lease id, cost} as a caller keeps them
            for (int step = 0; step < 400; step++)
            {
                time += random.nextInt(4) == 0 ? random.nextLong(2 * ttl) : random.nextLong(ttl / 20);
                if (!held.isEmpty() && random.nextInt(3) == 0)
                {
                    final long[] lease = held.remove(random.nextInt(held.size()));
                    key.release(limit, lease[0], lease[1], time);
                    model.release(lease[0], lease[1], time);
                }
                else
                {
                    final long cost = 1 + random.nextLong(Math.min(max, 4));
                    final long[] got = key.take(limit, cost, time);
                    final long[] expected = model.take(cost, time);
                    assertEquals(expected[0], got[0], "run " + run + " step " + step + ": grant");
                    assertEquals(expected[1], got[1], "run " + run + " step " + step + ": retry-after");
                    if (got[0] == 1)
                    {
                        held.add(new long[] {got[2], cost});
                    }
                }
                assertEquals(max - model.held(time), limit.available(key.state, key.last), "run " + run + " step " + step + ": free");
            }
        }
    }

    @Test
    void aLeaseNotReleasedCountsForAtLeastItsTtlAndAtMostAThirdMore()
    {
        final SplittableRandom random = new SplittableRandom(3);
        for (int i = 0; i < 10_000; i++)
        {
            final long ttl = SECOND + random.nextLong(3600 * SECOND);
            final ConcurrencyLimit limit = new ConcurrencyLimit(1, ttl);
            final long grant = random.nextLong(-1_000_000 * SECOND, 1_000_000 * SECOND);
            final long life = limit.nanosUntilExpiry(grant, grant);
            assertTrue(life > ttl && life <= ttl + ttl / 3 + 4, "ttl " + ttl + ": lives " + life);
            final Key key = new Key(limit, grant);
            assertEquals(1, key.take(limit, 1, grant)[0]);
            assertEquals(0, key.take(limit, 1, grant + life - 1)[0], "still held 1 ns before it expires");
            assertEquals(1, key.take(limit, 1, grant + life)[0], "free once it expired");
        }
    }

    @Test
    void aReleaseAfterItsLeaseExpiredFreesNothingAnotherHolderCountsOn()
    {
        final ConcurrencyLimit limit = new ConcurrencyLimit(1, 3 * SECOND);
        final Key key = new Key(limit, 0);
        final long first = key.take(limit, 1, 0)[2];
        final long[] second = key.take(limit, 1, 5 * SECOND); // the first expired at 4 s
        assertEquals(1, second[0]);
        key.release(limit, first, 1, 5 * SECOND + 1); // the slow first holder gives back late
        assertEquals(0, key.take(limit, 1, 5 * SECOND + 2)[0], "the second lease still counts");
        key.release(limit, second[2], 1, 5 * SECOND + 3);
        assertEquals(1, key.take(limit, 1, 5 * SECOND + 4)[0]);
    }

    @Test
    void aFullKeyIsForgettableOnlyWhenNoLeaseIsHeld()
    {
        final ConcurrencyLimit limit = new ConcurrencyLimit(10, 30 * SECOND);
        final Key key = new Key(limit, 0);
        final long lease = key.take(limit, 3, 0)[2];
        assertTrue(!limit.isFull(key.state, 0));
        assertEquals(limit.nanosUntilExpiry(lease, 0), limit.nanosUntilFull(key.state, 0));
        key.release(limit, lease, 3, SECOND);
        assertTrue(limit.isFull(key.state, SECOND));
        assertEquals(0, limit.nanosUntilFull(key.state, SECOND));
    }

    @Test
    void sharesAddUpToTheLimitAndRefuseLessThanOneLease()
    {
        final ConcurrencyLimit limit = new ConcurrencyLimit(10, 30 * SECOND);
        long total = 0;
        for (int i = 0; i < 4; i++)
        {
            total += limit.share(i, 4).maxConcurrent();
        }
        assertEquals(10, total);
        assertThrows(IllegalArgumentException.class, () -> limit.share(0, 11));
    }

    @Test
    void outOfRangeSettingsAreRefusedSayingTheRange()
    {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ConcurrencyLimit(0, SECOND)).getMessage().contains("1 to 65535"));
        assertThrows(IllegalArgumentException.class, () -> new ConcurrencyLimit(65_536, SECOND));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ConcurrencyLimit(1, SECOND - 1)).getMessage().contains("1s to 24h"));
    }

    @Test
    void aLeaseTokenRoundTripsAndBadOnesSayWhatIsWrong()
    {
        final byte[] fields = AcquireCodec.encodeFields("acme", "", "", "/v1/exports", "", "");
        final LeaseToken token = new LeaseToken(123_456_789_012L, -7, 2, fields);
        final LeaseToken back = LeaseToken.parse(token.encode());
        assertEquals(123_456_789_012L, back.leaseId());
        assertEquals(2, back.cost());
        assertEquals(-7, back.check());
        assertEquals(new String(fields, java.nio.charset.StandardCharsets.ISO_8859_1),
            new String(back.encodedFields(), java.nio.charset.StandardCharsets.ISO_8859_1));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseToken.parse("42")).getMessage().contains("L1."));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseToken.parse("L1.@@@")).getMessage().contains("base64url"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseToken.parse("L1.AAAA")).getMessage().contains("too short"));
    }
}
