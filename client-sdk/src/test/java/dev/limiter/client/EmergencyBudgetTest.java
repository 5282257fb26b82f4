package dev.limiter.client;

import com.google.protobuf.Duration;
import dev.limiter.protocol.CalendarMonthWindow;
import dev.limiter.protocol.FixedWindow;
import dev.limiter.protocol.TokenBucket;
import dev.limiter.protocol.policy.Algorithm;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.EmergencyBudget;
import dev.limiter.protocol.policy.Policy;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** How large an SDK's own emergency bucket is, alone or as one of a fleet. */
class EmergencyBudgetTest
{
    private static final long SECOND = 1_000_000_000L;

    private static Policy policy(final long rate, final long burst, final EmergencyBudget emergency)
    {
        return Policy.newBuilder().setId("p").setRate(rate).setBurst(burst).setEmergency(emergency).build();
    }

    /** How long an empty bucket of this rate takes to hold one token. */
    private static long nanosPerToken(final TokenBucket.Rate rate)
    {
        return rate.nanosUntil(0, rate.costUnits(1));
    }

    @Test
    void aloneAnSdkTakesTheWholeShareOfThePolicy()
    {
        final TokenBucket.Rate rate = LocalFallback.emergencyRate(policy(100, 50, EmergencyBudget.getDefaultInstance()),
            TokenBucket.rate(100, SECOND, 50), 0);
        assertEquals(5, rate.burstTokens(), "10% of the burst by default");
        assertEquals(SECOND / 10, nanosPerToken(rate), "10% of the rate: 10/s");
        assertEquals(rate.burstTokens(), LocalFallback.emergencyRate(policy(100, 50, EmergencyBudget.getDefaultInstance()),
            TokenBucket.rate(100, SECOND, 50), 1).burstTokens(), "one instance reported is the same as none");
    }

    @Test
    void aMonthlyQuotasBudgetIsAShareOfTheMonthNotOfASecondAndAnAwkwardWindowStillGetsOne()
    {
        final Policy monthly = Policy.newBuilder().setId("p").setRate(10_000).setAlgorithm(Algorithm.FIXED_WINDOW)
            .setCalendarWindow(CalendarWindow.MONTH).build();
        final TokenBucket.Rate rate = LocalFallback.emergencyRate(monthly, new CalendarMonthWindow(10_000), 0);
        assertEquals(1_000, rate.burstTokens(), "10% of the month's limit");
        assertEquals(CalendarMonthWindow.AVERAGE_MONTH_SECONDS * SECOND / 1_000, nanosPerToken(rate), "1,000 over an average month");

        // 1,000,003 a day is beyond exact token-bucket arithmetic: the local budget is the nearest one below it.
        final Policy daily = Policy.newBuilder().setId("d").setRate(1_000_003).setPeriod(Duration.newBuilder().setSeconds(86_400))
            .setAlgorithm(Algorithm.FIXED_WINDOW).build();
        final TokenBucket.Rate ramp = new FixedWindow(1_000_003, 86_400 * SECOND).asTokenBucket();
        assertTrue(ramp.burstTokens() <= 1_000_003 && ramp.burstTokens() >= 999_000, ramp.toString());
        assertTrue(LocalFallback.emergencyRate(daily, new FixedWindow(1_000_003, 86_400 * SECOND), 3).burstTokens() >= 1);
    }

    @Test
    void withSeveralLimitsTheBudgetIsTheShareOfTheTightestAndAConcurrencyLimitsIsPerLeaseTtl()
    {
        // 100/s burst 50, and 3,600 an hour: 10% is 10/s or 360/h (0.1/s); the hour is the tighter.
        final Policy both = policy(100, 50, EmergencyBudget.getDefaultInstance()).toBuilder()
            .addLimits(dev.limiter.protocol.policy.LimitSpec.newBuilder().setRate(3_600).setPeriod(Duration.newBuilder().setSeconds(3600))
                .setAlgorithm(Algorithm.FIXED_WINDOW)).build();
        final TokenBucket.Rate rate = LocalFallback.emergencyRate(both, TokenBucket.rate(100, SECOND, 50), 0);
        assertEquals(10 * SECOND, nanosPerToken(rate), "360 an hour: one token per 10 s, not 10/s");
        assertEquals(5, rate.burstTokens(), "the smaller burst: 10% of 50, not 10% of 3,600");

        final Policy exports = Policy.newBuilder().setId("x").setMaxConcurrent(40).setLeaseTtl(Duration.newBuilder().setSeconds(300)).build();
        final TokenBucket.Rate leases = LocalFallback.emergencyRate(exports, new dev.limiter.protocol.ConcurrencyLimit(40, 300 * SECOND), 0);
        assertEquals(4, leases.burstTokens(), "10% of 40 at once");
        assertEquals(75 * SECOND, nanosPerToken(leases), "4 grants per 300 s TTL");
    }

    @Test
    void aFleetSplitsTheBudgetExactlyOverTime()
    {
        // 10% of 100/s is 10/s for the fleet; four SDKs get 2.5/s each: 5 tokens in 2 s, not 4.
        final TokenBucket.Rate rate = LocalFallback.emergencyRate(policy(100, 100, EmergencyBudget.getDefaultInstance()),
            TokenBucket.rate(100, SECOND, 100), 4);
        assertEquals(2, rate.burstTokens(), "10 tokens of burst over 4, rounded down");
        assertEquals(SECOND * 2 / 5, nanosPerToken(rate), "2.5/s, not 2/s");
        final TokenBucket.Rate absolute = LocalFallback.emergencyRate(policy(100, 100, EmergencyBudget.newBuilder().setRate(12).build()),
            TokenBucket.rate(100, SECOND, 100), 5);
        assertEquals(2, absolute.burstTokens());
        assertEquals((SECOND * 5 + 11) / 12, nanosPerToken(absolute), "12/s over 5 instances is 2.4/s");
    }

    @Test
    void aBudgetSmallerThanTheFleetStillLeavesEachSdkOneToken()
    {
        final TokenBucket.Rate rate = LocalFallback.emergencyRate(policy(10, 10, EmergencyBudget.getDefaultInstance()),
            TokenBucket.rate(10, SECOND, 10), 50);
        assertEquals(1, rate.burstTokens(), "1 token of burst for the fleet, at least 1 each");
        assertEquals(50 * SECOND, nanosPerToken(rate), "1/s for the fleet: one token per 50 s each");
    }

    @Test
    void aPerInstanceBudgetIsWholeInEverySdk()
    {
        final EmergencyBudget perInstance = EmergencyBudget.newBuilder().setPercent(20).setPerInstance(true).build();
        final TokenBucket.Rate rate = LocalFallback.emergencyRate(policy(100, 100, perInstance), TokenBucket.rate(100, SECOND, 100), 8);
        assertEquals(20, rate.burstTokens());
        assertEquals(SECOND / 20, nanosPerToken(rate));
    }
}
