package dev.limiter.client;

import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Emergency budgets are kept per policy and scope, as nodes keep buckets: never per raw path, and never reset to make room. */
class LocalFallbackTest
{
    private static final long SECOND = 1_000_000_000L;

    private final AtomicLong now = new AtomicLong(1_000 * SECOND);
    private final PolicyCache cache = new PolicyCache(Duration.ofHours(1), now::get);
    private final LocalFallback fallback = new LocalFallback(cache, now::get, SECOND, null, () -> 0);

    private void hold(final Policy... policies)
    {
        final PolicySet.Builder set = PolicySet.newBuilder().setVersion(1)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("t"));
        for (final Policy policy : policies)
        {
            set.addPolicies(policy);
        }
        cache.received(1, set.build().toByteArray());
    }

    private static Policy orders(final Scope scope)
    {
        // 1,000/s, burst 1,000: the emergency budget is 10% of each, 100/s with a burst of 100.
        return Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
            .setRate(1000).setBurst(1000).setScope(scope).setOwner("team").build();
    }

    @Test
    void aMillionPathsUnderOneTemplateShareTheTenantsOneEmergencyBudget()
    {
        hold(orders(Scope.TENANT));
        final long start = now.get();
        long granted = 0;
        for (int i = 0; i < 1_000_000; i++)
        {
            now.addAndGet(1_000); // a million calls over one second
            final Decision d = fallback.decide(Descriptor.of("acme", "/v1/orders/" + i), 1, "test");
            assertTrue(d.degraded());
            granted += d.allowed() ? 1 : 0;
        }
        final long bound = 100 + (now.get() - start) * 100 / SECOND;
        assertTrue(granted <= bound, granted + " granted, more than burst + rate x time = " + bound);
        assertTrue(granted >= bound - 1, granted + " granted: the one budget was not used up");
        assertEquals(1, fallback.bucketCount(), "one bucket: the tenant's, not one per path");
    }

    @Test
    void eachScopeHasTheBucketANodeWouldKeep()
    {
        hold(orders(Scope.GLOBAL));
        fallback.decide(Descriptor.of("acme", "/v1/orders/1"), 1, "test");
        fallback.decide(Descriptor.of("globex", "/v1/orders/2"), 1, "test");
        assertEquals(1, fallback.bucketCount(), "GLOBAL: one budget for everybody");
    }

    @Test
    void pastTheCapNewScopesShareAnOverflowBudgetAndNoBudgetIsReset()
    {
        hold(orders(Scope.TENANT));
        // Drain one tenant's budget, then fill the table with live budgets of other tenants.
        long firstGranted = 0;
        for (int i = 0; i < 200; i++)
        {
            firstGranted += fallback.decide(Descriptor.of("first", "/v1/orders/1"), 1, "test").allowed() ? 1 : 0;
        }
        assertEquals(100, firstGranted);
        for (int i = 0; i < LocalFallback.MAX_BUCKETS + 5_000; i++)
        {
            fallback.decide(Descriptor.of("tenant-" + i, "/v1/orders/1"), 1, "test");
        }
        assertTrue(fallback.bucketCount() <= LocalFallback.MAX_BUCKETS + 1, fallback.bucketCount() + " buckets");
        assertTrue(!fallback.decide(Descriptor.of("first", "/v1/orders/1"), 1, "test").allowed(),
            "the drained tenant is still drained: nothing was reset to make room");
        // The overflow budget is one budget: 5,000 new tenants past the cap got at most its burst between them.
        long overflowGranted = 0;
        for (int i = 0; i < 1_000; i++)
        {
            overflowGranted += fallback.decide(Descriptor.of("late-" + i, "/v1/orders/1"), 1, "test").allowed() ? 1 : 0;
        }
        assertEquals(0, overflowGranted, "the overflow budget was spent by the first tenants past the cap");
        // Once buckets refill (a full bucket is as good as absent), new tenants get budgets of their own again.
        now.addAndGet(10 * SECOND);
        assertTrue(fallback.decide(Descriptor.of("later", "/v1/orders/1"), 1, "test").allowed());
    }

    @Test
    void twoHundredThousandNewTenantsInATightLoopStayWithinTheBoundAndEachLooksAtABoundedNumberOfBudgets()
    {
        hold(orders(Scope.TENANT));
        long maxExamined = 0;
        for (int i = 0; i < 200_000; i++)
        {
            now.addAndGet(1_000); // 0.2 s in all: a budget that gave 1 of 100 tokens refills in 10 ms
            final long before = fallback.bucketsExamined();
            assertTrue(fallback.decide(Descriptor.of("caller-" + i, "/v1/orders/1"), 1, "test").degraded());
            maxExamined = Math.max(maxExamined, fallback.bucketsExamined() - before);
            assertTrue(fallback.bucketCount() <= LocalFallback.MAX_BUCKETS + 1, "after " + (i + 1) + ": " + fallback.bucketCount());
        }
        assertTrue(maxExamined <= BoundedKeyTable.SCAN, "budgets looked at for one new tenant: " + maxExamined);
    }
}
