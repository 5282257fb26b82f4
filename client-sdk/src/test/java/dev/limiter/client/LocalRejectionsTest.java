package dev.limiter.client;

import dev.limiter.protocol.ReasonCode;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LocalRejectionsTest
{
    private static final long MS = 1_000_000L;
    private final LocalRejections rejections = new LocalRejections();
    private final Descriptor acme = Descriptor.of("acme", "/v1/orders/1");

    private static Decision refused(final ReasonCode reason, final long retryAfterNanos)
    {
        return new Decision(false, reason, 0, 5, retryAfterNanos, 500 * MS, "orders", 1, 1);
    }

    @Test
    void refusesTheSameDescriptorUntilTheRetryAfterWithoutAskingAndNeverAllows()
    {
        rejections.denied(acme, 1, refused(ReasonCode.RATE_LIMITED, 100 * MS), 0);
        final Decision local = rejections.stillDenied(acme, 1, 40 * MS);
        assertNotNull(local);
        assertFalse(local.allowed());
        assertFalse(local.degraded(), "the cluster said so; the SDK only repeats it");
        assertEquals(60 * MS, local.retryAfterNanos(), "counts down to the same moment");
        assertNull(rejections.stillDenied(acme, 1, 100 * MS), "at T the cluster is asked again");
        assertEquals(1, rejections.count());
    }

    @Test
    void aRefusalUntilMidnightIsRepeatedForOneSecondAtMostSoARaisedLimitIsSeen()
    {
        rejections.denied(acme, 1, refused(ReasonCode.RATE_LIMITED, 3600_000 * MS), 0);
        final Decision local = rejections.stillDenied(acme, 1, 400 * MS);
        assertNotNull(local);
        assertEquals(3600_000 * MS - 400 * MS, local.retryAfterNanos(), "still the cluster's moment");
        assertNull(rejections.stillDenied(acme, 1, LocalRejections.MAX_HOLD_NANOS), "after a second the cluster is asked again");
    }

    @Test
    void asksTheClusterForASmallerCostAnotherDescriptorOrARefusalWithoutATime()
    {
        rejections.denied(acme, 5, refused(ReasonCode.RATE_LIMITED, 100 * MS), 0);
        assertNull(rejections.stillDenied(acme, 1, 10 * MS), "a smaller request may fit");
        assertNotNull(rejections.stillDenied(acme, 5, 10 * MS));
        assertNull(rejections.stillDenied(Descriptor.of("globex", "/v1/orders/1"), 5, 10 * MS));
        final Descriptor never = Descriptor.of("initech", "/v1/orders/1");
        rejections.denied(never, 1, refused(ReasonCode.COST_EXCEEDS_BURST, -1), 0);
        assertNull(rejections.stillDenied(never, 1, 1), "no time to wait for: nothing remembered");
    }

    @Test
    void twoHundredThousandNewRefusedDescriptorsStayWithinTheBoundLookAtABoundedNumberEachAndABusyRefusalIsKept()
    {
        // The busy caller is refused and calls on; meanwhile every other call is a new descriptor, refused too.
        long now = 0;
        rejections.denied(acme, 1, refused(ReasonCode.RATE_LIMITED, 100 * MS), now);
        long maxExamined = 0;
        for (int i = 0; i < 200_000; i++)
        {
            now += 1_000; // 0.2 s in all
            final Descriptor newKey = Descriptor.of("caller-" + i, "/v1/orders/1");
            assertNull(rejections.stillDenied(newKey, 1, now));
            final long before = rejections.examined();
            rejections.denied(newKey, 1, refused(ReasonCode.RATE_LIMITED, 100 * MS), now);
            maxExamined = Math.max(maxExamined, rejections.examined() - before);
            assertTrue(rejections.remembered() <= LocalRejections.MAX_ENTRIES, "after " + (i + 1) + ": " + rejections.remembered());
            if (rejections.stillDenied(acme, 1, now) == null)
            {
                // Its refusal ran out (100 ms): the cluster refuses it again.
                rejections.denied(acme, 1, refused(ReasonCode.RATE_LIMITED, 100 * MS), now);
                assertTrue(now % (100 * MS) == 0, "the busy caller's refusal was forgotten before it ran out, at " + now / MS + " ms");
            }
        }
        assertTrue(maxExamined <= BoundedKeyTable.SCAN, "refusals looked at for one new descriptor: " + maxExamined);
    }
}
