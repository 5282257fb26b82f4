package dev.limiter.protocol;

import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * FIXED_WINDOW and SLIDING_WINDOW against simple reference models: for the same request sequence
 * and times, the same grants and the same retry-after, driven the way the table drives a
 * {@link Limit} (refill from the stored time, available, charge, store the later time).
 */
class WindowLimitsTest
{
    private static final long SECOND = 1_000_000_000L;
    private static final long DAY = 86_400 * SECOND;

    /** A key as the table keeps it: state and the time stored with it. */
    private static final class Key
    {
        long state;
        long last;

        Key(final Limit limit, final long now)
        {
            state = limit.fullState();
            last = now;
        }

        /** {granted 0/1, retry-after ns} at {@code time}; time may run behind the stored one (a new leader's wall clock). */
        long[] take(final Limit limit, final long cost, final long time)
        {
            final long now = Math.max(last, time);
            state = limit.refill(state, last, now);
            last = now;
            final long available = limit.available(state, now);
            if (available >= cost)
            {
                state = limit.charge(state, cost);
                return new long[] {1, 0};
            }
            return new long[] {0, limit.nanosUntil(state, cost, now)};
        }
    }

    @Test
    void aFixedWindowOfADayEndsAtMidnightUtc()
    {
        final FixedWindow daily = new FixedWindow(10_000, DAY);
        final long lateEvening = Instant.parse("2026-12-04T23:59:59Z").getEpochSecond() * SECOND;
        final Key key = new Key(daily, lateEvening);
        assertEquals(1, key.take(daily, 10_000, lateEvening)[0]);
        final long[] refused = key.take(daily, 1, lateEvening + SECOND / 2);
        assertEquals(0, refused[0]);
        assertEquals(SECOND / 2, refused[1], "retry at midnight UTC");
        assertEquals(1, key.take(daily, 10_000, Instant.parse("2026-12-05T00:00:00Z").getEpochSecond() * SECOND)[0],
            "the whole limit again from midnight");
        assertEquals(DAY / SECOND, daily.windowSeconds());
    }

    @Test
    void calendarMonthsAreJavaTimesMonthsInUtc()
    {
        final SplittableRandom random = new SplittableRandom(17);
        for (int i = 0; i < 200_000; i++)
        {
            // 1900 to 2185, with instants close to month boundaries half of the time.
            long nanos = -2_208_988_800L * SECOND + random.nextLong(9_000_000_000L * SECOND);
            final java.time.YearMonth month = java.time.YearMonth.from(java.time.Instant.ofEpochSecond(Math.floorDiv(nanos, SECOND))
                .atZone(java.time.ZoneOffset.UTC));
            final long start = month.atDay(1).atStartOfDay(java.time.ZoneOffset.UTC).toEpochSecond() * SECOND;
            if (random.nextBoolean())
            {
                nanos = start + random.nextLong(-2, 2);
            }
            final java.time.YearMonth expected = java.time.YearMonth.from(java.time.Instant.ofEpochSecond(Math.floorDiv(nanos, SECOND))
                .atZone(java.time.ZoneOffset.UTC));
            final long index = (expected.getYear() - 1970L) * 12 + expected.getMonthValue() - 1;
            assertEquals(index, CalendarMonthWindow.monthIndex(nanos), "month of " + nanos);
            assertEquals(expected.atDay(1).atStartOfDay(java.time.ZoneOffset.UTC).toEpochSecond() * SECOND,
                CalendarMonthWindow.monthStartNanos(index), "start of " + expected);
        }
    }

    @Test
    void aMonthlyWindowResetsOnTheFirstOfTheMonthUtcWhateverTheMonthsLength()
    {
        final CalendarMonthWindow monthly = new CalendarMonthWindow(10_000);
        final long leapDayEvening = Instant.parse("2028-02-29T23:00:00Z").getEpochSecond() * SECOND;
        final Key key = new Key(monthly, Instant.parse("2028-02-01T00:00:00Z").getEpochSecond() * SECOND);
        assertEquals(1, key.take(monthly, 10_000, Instant.parse("2028-02-01T00:00:00Z").getEpochSecond() * SECOND)[0]);
        final long[] refused = key.take(monthly, 1, leapDayEvening);
        assertEquals(0, refused[0], "the whole of February's limit was taken on the 1st");
        assertEquals(3600 * SECOND, refused[1], "retry at March 1st, 00:00 UTC");
        assertEquals(1, key.take(monthly, 10_000, leapDayEvening + 3600 * SECOND)[0], "March: the whole limit again");
        assertEquals(0, key.take(monthly, 1, Instant.parse("2028-03-31T23:59:59Z").getEpochSecond() * SECOND)[0]);
        assertTrue(monthly.isFull(monthly.refill(key.state, key.last, Instant.parse("2028-04-01T00:00:00Z").getEpochSecond() * SECOND),
            Instant.parse("2028-04-01T00:00:00Z").getEpochSecond() * SECOND), "April: as never seen");
    }

    @Test
    void fixedWindowGrantsWhatAReferenceCounterGrants()
    {
        final SplittableRandom random = new SplittableRandom(7);
        for (int round = 0; round < 200; round++)
        {
            final long limit = 1 + random.nextInt(50);
            final long period = 1 + random.nextLong(5 * SECOND);
            final FixedWindow window = new FixedWindow(limit, period);
            long time = random.nextLong(1L << 50);
            final Key key = new Key(window, time);
            final Map<Long, Long> reference = new HashMap<>();
            for (int i = 0; i < 300; i++)
            {
                time += random.nextLong(Math.max(1, 3 * period / limit));
                final long cost = 1 + random.nextInt((int)Math.min(limit, 5));
                final long index = Math.floorDiv(time, period);
                final long used = reference.getOrDefault(index, 0L);
                final boolean expected = used + cost <= limit;
                if (expected)
                {
                    reference.put(index, used + cost);
                }
                final long[] got = key.take(window, cost, time);
                assertEquals(expected ? 1 : 0, got[0], "round " + round + " request " + i);
                assertEquals(expected ? 0 : (index + 1) * period - time, got[1], "retry-after: the next window's start");
            }
        }
    }

    @Test
    void slidingWindowGrantsAndRetryAfterMatchAnExactReference()
    {
        final SplittableRandom random = new SplittableRandom(11);
        for (int round = 0; round < 200; round++)
        {
            final long limit = 1 + random.nextInt(40);
            // Periods up to a year: products beyond 64 bits are the 128-bit path.
            final long period = random.nextBoolean() ? 1 + random.nextLong(3 * SECOND) : 1 + random.nextLong(366 * DAY);
            final SlidingWindow window = new SlidingWindow(limit, period);
            long time = random.nextLong(1L << 60);
            final Key key = new Key(window, time);
            final List<long[]> grants = new ArrayList<>();
            for (int i = 0; i < 200; i++)
            {
                time += random.nextLong(Math.max(1, 2 * period / limit));
                final long cost = 1 + random.nextInt((int)Math.min(limit, 4));
                final boolean expected = referenceAllows(grants, limit, period, cost, time);
                final long[] got = key.take(window, cost, time);
                assertEquals(expected ? 1 : 0, got[0], "round " + round + " request " + i + " at " + time);
                if (expected)
                {
                    grants.add(new long[] {time, cost});
                }
                else
                {
                    final long retry = got[1];
                    assertTrue(retry > 0, "a refusal waits");
                    assertTrue(referenceAllows(grants, limit, period, cost, time + retry), "allowed once the retry-after has passed");
                    assertFalse(referenceAllows(grants, limit, period, cost, time + retry - 1), "and not a nanosecond sooner");
                }
            }
        }
    }

    /** cur + ceil(prev x (period - e) / period) + cost <= limit, from the grants themselves, in exact big-integer arithmetic. */
    private static boolean referenceAllows(final List<long[]> grants, final long limit, final long period, final long cost, final long time)
    {
        final long index = Math.floorDiv(time, period);
        long current = 0;
        long previous = 0;
        for (final long[] grant : grants)
        {
            final long grantIndex = Math.floorDiv(grant[0], period);
            current += grantIndex == index ? grant[1] : 0;
            previous += grantIndex == index - 1 ? grant[1] : 0;
        }
        final BigInteger remaining = BigInteger.valueOf(period - Math.floorMod(time, period));
        final BigInteger[] qr = BigInteger.valueOf(previous).multiply(remaining).divideAndRemainder(BigInteger.valueOf(period));
        final long weighted = qr[0].longValueExact() + (qr[1].signum() == 0 ? 0 : 1);
        return current + weighted + cost <= limit;
    }

    @Test
    void slidingWindowNeverGrantsMoreThanItsLimitInAnAlignedWindowNorTwiceItInATrailingOne()
    {
        final SplittableRandom random = new SplittableRandom(3);
        for (int round = 0; round < 100; round++)
        {
            final long limit = 1 + random.nextInt(100);
            final long period = SECOND;
            final SlidingWindow window = new SlidingWindow(limit, period);
            long time = random.nextLong(1L << 40);
            final Key key = new Key(window, time);
            final List<Long> granted = new ArrayList<>();
            for (int i = 0; i < 2000; i++)
            {
                // Bursty: long quiet spells, then requests packed at a window's end.
                time += random.nextInt(10) == 0 ? random.nextLong(period) : random.nextLong(period / 200 + 1);
                if (key.take(window, 1, time)[0] == 1)
                {
                    granted.add(time);
                }
            }
            final Map<Long, Long> perWindow = new HashMap<>();
            for (final long t : granted)
            {
                perWindow.merge(Math.floorDiv(t, period), 1L, Long::sum);
            }
            perWindow.forEach((w, n) -> assertTrue(n <= limit, "window " + w + " granted " + n + " of " + limit));
            for (int i = 0, j = 0; i < granted.size(); i++)
            {
                while (granted.get(i) - granted.get(j) >= period)
                {
                    j++;
                }
                assertTrue(i - j + 1 <= 2 * limit, "a trailing period granted " + (i - j + 1) + " of " + limit);
            }
        }
    }

    @Test
    void aWindowThatHasPassedIsForgottenAndTimeNeverGoesBack()
    {
        final SlidingWindow window = new SlidingWindow(10, SECOND);
        final Key key = new Key(window, 5 * SECOND);
        assertEquals(1, key.take(window, 10, 5 * SECOND + 1)[0]);
        assertFalse(window.isFull(window.refill(key.state, key.last, 6 * SECOND), 6 * SECOND), "next window: weighted by the last");
        assertTrue(window.isFull(window.refill(key.state, key.last, 7 * SECOND), 7 * SECOND), "two windows on: as never seen");
        // A leader whose wall clock runs behind decides at the key's own time, not before it.
        assertEquals(0, key.take(window, 1, 4 * SECOND)[0]);
        final FixedWindow fixed = new FixedWindow(3, SECOND);
        final Key other = new Key(fixed, 9 * SECOND);
        assertEquals(1, other.take(fixed, 3, 9 * SECOND)[0]);
        assertEquals(0, other.take(fixed, 1, 8 * SECOND)[0], "an earlier time stays in the key's window");
        assertTrue(fixed.isFull(fixed.refill(other.state, other.last, 10 * SECOND), 10 * SECOND));
    }

    @Test
    void sharesOfAWindowAddUpToItsLimit()
    {
        final FixedWindow fixed = new FixedWindow(10, SECOND);
        final SlidingWindow sliding = new SlidingWindow(10, SECOND);
        long fixedSum = 0;
        long slidingSum = 0;
        for (int s = 0; s < 3; s++)
        {
            fixedSum += fixed.share(s, 3).burstTokens();
            slidingSum += sliding.share(s, 3).burstTokens();
        }
        assertEquals(10, fixedSum);
        assertEquals(10, slidingSum);
        final IllegalArgumentException tooSmall = assertThrows(IllegalArgumentException.class, () -> fixed.share(0, 11));
        assertTrue(tooSmall.getMessage().contains("raise the window's rate to at least 11"), tooSmall.getMessage());
    }

    @Test
    void exactProductsBeyondSixtyFourBits()
    {
        final SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 100_000; i++)
        {
            final long d = 1 + random.nextLong(Long.MAX_VALUE >> random.nextInt(60));
            final long a = random.nextLong(1L << 31);
            final long b = random.nextLong(d + 1); // a x b / d below 2^31: the results the windows ask for
            final BigInteger[] qr = BigInteger.valueOf(a).multiply(BigInteger.valueOf(b)).divideAndRemainder(BigInteger.valueOf(d));
            assertEquals(qr[0].longValueExact(), SlidingWindow.floorMulDiv(a, b, d), a + " x " + b + " / " + d);
            assertEquals(qr[0].longValueExact() + (qr[1].signum() == 0 ? 0 : 1), SlidingWindow.ceilMulDiv(a, b, d));
        }
    }

    @Test
    void badWindowsAreRefusedSayingWhatToChange()
    {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new SlidingWindow(SlidingWindow.MAX_LIMIT + 1, SECOND))
            .getMessage().contains("use FIXED_WINDOW or TOKEN_BUCKET"));
        assertThrows(IllegalArgumentException.class, () -> new FixedWindow(0, SECOND));
        assertThrows(IllegalArgumentException.class, () -> new FixedWindow(1, 0));
    }
}
