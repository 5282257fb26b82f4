package dev.limiter.protocol;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admission rule's properties, for every kind of limit, over random states reached by random
 * requests at random times: the rule is written once ({@link Admission}), so it is tested once.
 */
class AdmissionTest
{
    private static final long SECOND = 1_000_000_000L;

    /** A random limit of every kind the policies compile to. */
    private static Limit randomLimit(final SplittableRandom random)
    {
        final long rate = 1 + random.nextInt(1_000);
        final long burst = 1 + random.nextInt(2_000);
        final TokenBucket.Rate bucket = TokenBucket.rate(rate, SECOND * (1 + random.nextInt(60)), burst);
        return switch (random.nextInt(8))
        {
            case 0 -> bucket;
            case 1 -> new Gcra(bucket);
            case 2 -> new FixedWindow(burst, SECOND * (1 + random.nextInt(3_600)));
            case 3 -> new SlidingWindow(burst, SECOND * (1 + random.nextInt(3_600)));
            case 4 -> new ConcurrencyLimit(burst, SECOND * (1 + random.nextInt(60)));
            case 5 -> ExcessLimit.softOverage(bucket, 1 + random.nextInt(100));
            case 6 -> ExcessLimit.softOverage(new FixedWindow(burst, SECOND * (1 + random.nextInt(60))), 1
                + random.nextInt(100));
            default -> ExcessLimit.waiting(random.nextBoolean() ? bucket : new Gcra(bucket), 1
                + random.nextLong(10 * SECOND));
        };
    }

    /** One key's life: requests at random times, each decided by the rule, the state kept as a table would. */
    private static final class Key
    {
        final Limit limit;
        long state;
        long last;

        Key(final Limit limit, final long start)
        {
            this.limit = limit;
            this.state = limit.fullState();
            this.last = start;
        }

        /** The state refilled to {@code now} (never earlier than the last change). */
        long at(final long now)
        {
            return limit.refill(state, last, Math.max(last, now));
        }

        void decide(final long now, final long cost, final Verdict out)
        {
            final long t = Math.max(last, now);
            state = Admission.decide(limit, at(t), t, cost, 0, out);
            last = t;
        }
    }

    @Test
    void aRequestIsChargedExactlyWhenAllowedAndARefusalChangesNothing()
    {
        forRandomKeys(7, (key, now, cost, floor, random) ->
        {
            final Verdict out = new Verdict();
            final long state = key.at(now);
            final long after = Admission.decide(key.limit, state, now, cost, floor, out);
            if (out.allowed())
            {
                assertEquals(key.limit.charge(state, key.limit.costUnits(cost)), after, out.toString());
                assertTrue(out.remainingTokens() >= 0 && out.remainingTokens() <= key.limit.burstTokens(),
                    out.toString());
            }
            else
            {
                assertEquals(state, after, "a refusal charges nothing: " + out);
            }
            assertEquals(now, out.timeNanos());
        });
    }

    @Test
    void aCostOverTheBurstIsNeverAllowedAndSaysSo()
    {
        forRandomKeys(11, (key, now, cost, floor, random) ->
        {
            final Verdict out = new Verdict();
            final long state = key.at(now);
            assertEquals(state, Admission.decide(key.limit, state, now, key.limit.burstTokens() + 1
                + random.nextInt(10), floor, out));
            assertFalse(out.allowed());
            assertEquals(ReasonCode.COST_EXCEEDS_BURST, out.reason());
            assertEquals(ResultCodec.NEVER, out.retryAfterNanos());
        });
    }

    @Test
    void aFloorOnlyEverRefusesMoreAndIsNeverReservedAgainst()
    {
        forRandomKeys(13, (key, now, cost, floor, random) ->
        {
            final Verdict withFloor = new Verdict();
            final Verdict without = new Verdict();
            final long state = key.at(now);
            Admission.decide(key.limit, state, now, cost, floor, withFloor);
            Admission.decide(key.limit, state, now, cost, 0, without);
            if (withFloor.allowed())
            {
                assertTrue(without.allowed(), "allowed above a floor, so without one: " + withFloor + " / " + without);
            }
            if (floor > 0)
            {
                assertTrue(withFloor.reason() != ReasonCode.RESERVED, "a reserve is not spent on a wait: " + withFloor);
            }
        });
    }

    @Test
    void aRefusalsRetryAfterIsWhenTheSameRequestIsAllowedIfNothingElseIsTaken()
    {
        final int[] refusals = new int[1];
        forRandomKeys(17, (key, now, cost, floor, random) ->
        {
            final Verdict refused = new Verdict();
            final long state = key.at(now);
            Admission.decide(key.limit, state, now, cost, 0, refused);
            if (refused.allowed() || refused.reason() != ReasonCode.RATE_LIMITED)
            {
                return;
            }
            refusals[0]++;
            assertTrue(refused.retryAfterNanos() > 0, "a refusal names a time to come back: " + refused);
            final long then = now + refused.retryAfterNanos();
            final Verdict retried = new Verdict();
            Admission.decide(key.limit, key.limit.refill(state, now, then), then, cost, 0, retried);
            assertTrue(retried.allowed(), key.limit.algorithm() + ": refused " + refused
                + ", retried at its retry-after " + retried);
        });
        assertTrue(refusals[0] > 1_000, "refusals checked: " + refusals[0]);
    }

    @Test
    void theReasonSaysHowARequestWasAllowed()
    {
        final java.util.EnumMap<ReasonCode, Integer> seen = new java.util.EnumMap<>(ReasonCode.class);
        forRandomKeys(19, (key, now, cost, floor, random) ->
        {
            final Verdict out = new Verdict();
            Admission.decide(key.limit, key.at(now), now, cost, floor, out);
            seen.merge(out.reason(), 1, Integer::sum);
            if (out.reason() == ReasonCode.SOFT_OVERAGE)
            {
                assertTrue(out.allowed() && key.limit.overageUnits() > 0, out.toString());
            }
            if (out.reason() == ReasonCode.RESERVED)
            {
                assertTrue(out.allowed() && key.limit.maxWaitNanos() > 0 && out.retryAfterNanos() > 0 &&
                    out.retryAfterNanos() <= key.limit.maxWaitNanos(), "a reservation's wait is within the longest: "
                        + out);
            }
            if (out.allowed() && key.limit.overageUnits() == 0 && key.limit.maxWaitNanos() == 0)
            {
                assertEquals(ReasonCode.ALLOWED, out.reason());
                assertEquals(0, out.retryAfterNanos());
            }
        });
        for (final ReasonCode reason : List.of(ReasonCode.ALLOWED, ReasonCode.SOFT_OVERAGE, ReasonCode.RESERVED,
            ReasonCode.RATE_LIMITED))
        {
            assertTrue(seen.getOrDefault(reason, 0) > 100, "every outcome is exercised: " + seen);
        }
    }

    @FunctionalInterface
    private interface Check
    {
        void check(Key key, long now, long cost, long floorUnits, SplittableRandom random);
    }

    /** 300 random keys, each driven through 200 random requests; the check runs before each. */
    private static void forRandomKeys(final long seed, final Check check)
    {
        final SplittableRandom random = new SplittableRandom(seed);
        final List<Key> keys = new ArrayList<>();
        for (int k = 0; k < 300; k++)
        {
            keys.add(new Key(randomLimit(random), 1_700_000_000L * SECOND + random.nextLong(SECOND)));
        }
        final Verdict scratch = new Verdict();
        for (final Key key : keys)
        {
            long now = key.last;
            for (int i = 0; i < 200; i++)
            {
                now += random.nextInt(4) == 0 ? random.nextLong(5 * SECOND) : random.nextLong(SECOND / 100 + 1);
                final long burst = key.limit.burstTokens();
                final long cost = 1 + random.nextLong(Math.max(1, random.nextInt(4) == 0 ? burst : Math.min(burst,
                    10)));
                final long floor = random.nextBoolean() ? 0 : key.limit.costUnits(random.nextLong(burst + 1));
                check.check(key, now, cost, floor, random);
                key.decide(now, cost, scratch);
            }
        }
    }
}
