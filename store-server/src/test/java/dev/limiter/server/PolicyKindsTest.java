package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static dev.limiter.server.testing.AdminCalls.TOKEN;
import static dev.limiter.server.testing.AdminCalls.call;
import static dev.limiter.server.testing.AdminCalls.metric;
import static dev.limiter.server.testing.AdminCalls.metrics;
import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What each kind of policy set through the admin API decides: a shadow version, fixed and sliding windows, a
 * soft overage, several limits in one policy and a policy callers wait under.
 */
@Timeout(60)
class PolicyKindsTest
{
    @TempDir
    Path dir;

    /** Three tenants, each asking once every 100 ms for 2 s of (manual) time; returns the denials. */
    private static int drive(final LimiterClient client, final ManualClock clock, final String round)
    {
        int denied = 0;
        for (int step = 0; step < 20; step++)
        {
            for (int tenant = 0; tenant < 3; tenant++)
            {
                final Decision decision = client.acquireBlocking(Descriptor.of("tenant-" + tenant, "/v1/orders/" + round), 1);
                denied += decision.allowed() ? 0 : 1;
            }
            clock.advance(SECOND / 10);
        }
        return denied;
    }

    @Test
    void aShadowVersionsWouldDenyCountMatchesWhatEnforcingItDeniesOnTheSameTraffic() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 2).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final String tight = "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":3,\"period\":\"1s\",\"burst\":2," +
                "\"owner\":\"team-orders\",\"reason\":\"try 3/s\",\"mode\":\"%s\"}";
            final HttpResponse<String> shadow = call(server, "PUT", "/v1/policies/orders", String.format(tight, "SHADOW"));
            assertEquals(200, shadow.statusCode(), shadow.body());
            assertEquals(1, server.policyState().current("orders").getVersion(), "version 1 stays enforced beside the shadow");

            assertEquals(0, drive(client, clock, "1"), "a shadow never denies, and version 1 (10/s, burst 5) allows all of it");
            final String metrics = metrics(server);
            final long wouldDeny = metric(metrics, "limiter_shadow_decisions_total{outcome=\"would_deny\",policy=\"orders\"}");
            final long wouldAllow = metric(metrics, "limiter_shadow_decisions_total{outcome=\"would_allow\",policy=\"orders\"}");
            assertEquals(60, wouldDeny + wouldAllow, metrics);
            assertTrue(wouldDeny > 20, "3/s with a burst of 2 against 10/s of traffic: " + wouldDeny);

            // Promote the shadow: the same limits, enforced (a new version, so new buckets), on the same traffic.
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", String.format(tight, "ENFORCE")).statusCode());
            assertEquals(3, server.policyState().current("orders").getVersion());
            assertEquals(wouldDeny, drive(client, clock, "1"), "enforcing denies exactly what the shadow would have");
            assertFalse(server.policyState().index().hasShadow(), "promoting ends the shadow");
        }
    }

    @Test
    void aDailyFixedWindowEndsAtMidnightUtcAndASlidingWindowGivesItsBudgetBackGradually() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        // The node's wall clock reads 2026-12-04T23:59:58Z now.
        final long lateEvening = java.time.Instant.parse("2026-12-04T23:59:58Z").getEpochSecond() * SECOND;
        clock.wallOffset(lateEvening - SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 2).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            assertEquals(200, call(server, "PUT", "/v1/policies/daily", "{\"selector\":{\"route\":\"/v1/daily/{id}\"},\"rate\":3," +
                "\"period\":\"86400s\",\"algorithm\":\"FIXED_WINDOW\",\"owner\":\"team-billing\",\"reason\":\"3 a day\"}").statusCode());
            assertEquals(200, call(server, "PUT", "/v1/policies/rolling", "{\"selector\":{\"route\":\"/v1/rolling/{id}\"},\"rate\":10," +
                "\"period\":\"1s\",\"algorithm\":\"SLIDING_WINDOW\",\"owner\":\"team-search\",\"reason\":\"10 a second\"}").statusCode());

            for (int i = 0; i < 3; i++)
            {
                assertTrue(client.acquireBlocking(Descriptor.of("acme", "/v1/daily/1"), 1).allowed());
            }
            final Decision refused = client.acquireBlocking(Descriptor.of("acme", "/v1/daily/1"), 1);
            assertFalse(refused.allowed());
            assertEquals("daily", refused.policyId());
            assertEquals(Duration.ofSeconds(2), refused.retryAfter(), "until midnight UTC");
            assertEquals(86_400, refused.windowSeconds());
            assertEquals(3, refused.limit());
            assertTrue(client.acquireBlocking(Descriptor.of("globex", "/v1/daily/1"), 1).allowed(), "each tenant has its own window");

            // The sliding window: 10 in the second that starts at 23:59:58, then half a second into the next.
            for (int i = 0; i < 10; i++)
            {
                assertTrue(client.acquireBlocking(Descriptor.of("acme", "/v1/rolling/1"), 1).allowed());
            }
            final Decision full = client.acquireBlocking(Descriptor.of("acme", "/v1/rolling/1"), 1);
            assertFalse(full.allowed());
            assertEquals(Duration.ofMillis(1100), full.retryAfter(), "a tenth into the next second this one weighs 9/10: one more fits");
            clock.advance(SECOND + SECOND / 2);
            int allowed = 0;
            for (int i = 0; i < 10; i++)
            {
                allowed += client.acquireBlocking(Descriptor.of("acme", "/v1/rolling/1"), 1).allowed() ? 1 : 0;
            }
            assertEquals(5, allowed, "half-way through the next second, half the previous one still counts");

            clock.advance(SECOND / 2); // midnight UTC
            assertTrue(client.acquireBlocking(Descriptor.of("acme", "/v1/daily/1"), 1).allowed(), "a new day, a new window");
        }
    }

    @Test
    void aSoftOverageIsAllowedToldAndCountedAndABadOneIsRefused() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 2).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final String soft = "{\"selector\":{\"route\":\"/v1/reports/{id}\"},\"rate\":10,\"period\":\"60s\",\"algorithm\":\"FIXED_WINDOW\"," +
                "\"excess\":\"SOFT_OVERAGE\",\"overagePercent\":%d,\"owner\":\"billing\",\"reason\":\"bill beyond 10 a minute\"}";
            final HttpResponse<String> bad = call(server, "PUT", "/v1/policies/reports", String.format(soft, 0));
            assertEquals(400, bad.statusCode());
            assertTrue(bad.body().contains("policy.overagePercent: a SOFT_OVERAGE allows 1 to 100 percent of the limit beyond it, was 0"),
                bad.body());
            assertEquals(200, call(server, "PUT", "/v1/policies/reports", String.format(soft, 30)).statusCode());

            int allowed = 0;
            int overage = 0;
            for (int i = 0; i < 20; i++)
            {
                final Decision decision = client.acquireBlocking(Descriptor.of("acme", "/v1/reports/1"), 1);
                allowed += decision.allowed() ? 1 : 0;
                overage += decision.reason() == ReasonCode.SOFT_OVERAGE ? 1 : 0;
                assertEquals(decision.reason() == ReasonCode.SOFT_OVERAGE, i >= 10 && i < 13, "request " + i + ": " + decision);
            }
            assertEquals(13, allowed, "10 a minute and 30% of it beyond");
            assertEquals(3, overage);
            final String metrics = metrics(server);
            assertEquals(3, metric(metrics, "limiter_soft_overage_total{policy=\"reports\"}"), metrics);
            assertEquals(13, metric(metrics, "limiter_decisions_total{outcome=\"allowed\",policy=\"reports\"}"));

            // A stacked scope's overage is told and counted as its own.
            assertEquals(200, call(server, "PUT", "/v1/policies/reports-cap", "{\"selector\":{\"route\":\"/v1/reports/{id}\"}," +
                "\"rate\":5,\"period\":\"60s\",\"algorithm\":\"FIXED_WINDOW\",\"stacked\":true,\"excess\":\"SOFT_OVERAGE\"," +
                "\"overagePercent\":20,\"owner\":\"billing\",\"reason\":\"a tenant cap\"}").statusCode());
            final List<ReasonCode> reasons = new java.util.ArrayList<>();
            for (int i = 0; i < 7; i++)
            {
                reasons.add(client.acquireBlocking(Descriptor.of("globex", "/v1/reports/1"), 1).reason());
            }
            assertEquals(List.of(ReasonCode.ALLOWED, ReasonCode.ALLOWED, ReasonCode.ALLOWED, ReasonCode.ALLOWED, ReasonCode.ALLOWED,
                ReasonCode.SOFT_OVERAGE, ReasonCode.RATE_LIMITED), reasons);
            assertEquals(1, metric(metrics(server),
                "limiter_soft_overage_total{policy=\"reports-cap\"}"));
        }
    }

    @Test
    void aPolicyWithSeveralLimitsChargesEveryOneOrNoneAndNamesTheOneThatRefused() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        clock.wallOffset(java.time.Instant.parse("2026-12-04T10:00:00Z").getEpochSecond() * SECOND - SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 2).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // 5 a second (burst 5), and at most 8 a minute.
            assertEquals(200, call(server, "PUT", "/v1/policies/search", "{\"selector\":{\"route\":\"/v1/search\"},\"rate\":5,\"burst\":5," +
                "\"limits\":[{\"rate\":8,\"period\":\"60s\",\"algorithm\":\"FIXED_WINDOW\"}],\"owner\":\"search\",\"reason\":\"5/s, 8/min\"}")
                .statusCode());
            for (int i = 0; i < 5; i++)
            {
                assertTrue(client.acquireBlocking(Descriptor.of("acme", "/v1/search"), 1).allowed());
            }
            final Decision perSecond = client.acquireBlocking(Descriptor.of("acme", "/v1/search"), 1);
            assertFalse(perSecond.allowed());
            assertEquals(5, perSecond.limit(), "the per-second limit refused");
            assertEquals(Duration.ofMillis(200), perSecond.retryAfter());

            clock.advance(SECOND);
            int allowed = 0;
            Decision perMinute = null;
            for (int i = 0; i < 5; i++)
            {
                final Decision d = client.acquireBlocking(Descriptor.of("acme", "/v1/search"), 1);
                allowed += d.allowed() ? 1 : 0;
                perMinute = d.allowed() ? perMinute : d;
            }
            assertEquals(3, allowed, "the minute's 8 less the 5 already taken");
            assertEquals(8, perMinute.limit(), "the per-minute limit refused");
            assertEquals(60, perMinute.windowSeconds());
            assertEquals(Duration.ofSeconds(59), perMinute.retryAfter(), "until the minute ends");
            assertEquals("search", perMinute.policyId());

            // All or none: 10 an hour (burst 10) and at most 2 a second. Five asks every second: the
            // second's refusals take nothing from the hour's bucket, so it lasts five seconds (10 granted).
            assertEquals(200, call(server, "PUT", "/v1/policies/export", "{\"selector\":{\"route\":\"/v1/export\"},\"rate\":10," +
                "\"period\":\"3600s\",\"burst\":10,\"limits\":[{\"rate\":2,\"period\":\"1s\",\"algorithm\":\"FIXED_WINDOW\"}]," +
                "\"owner\":\"data\",\"reason\":\"10/h, 2/s\"}").statusCode());
            int granted = 0;
            Decision last = null;
            for (int second = 0; second < 7; second++)
            {
                for (int i = 0; i < 5; i++)
                {
                    last = client.acquireBlocking(Descriptor.of("acme", "/v1/export"), 1);
                    granted += last.allowed() ? 1 : 0;
                }
                clock.advance(SECOND);
            }
            assertEquals(10, granted, "the hour's 10, two a second: no refusal of the second's limit charged the hour's");
            assertEquals(10, last.limit(), "at the end the hour's limit refuses");
        }
    }

    @Test
    void underAWaitPolicyABlockingCallerWaitsForItsReservedTokensInsteadOfBeingRefused() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 2).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final String waiting = "{\"selector\":{\"route\":\"/v1/mail\"},\"rate\":5,\"burst\":1,\"excess\":\"WAIT\",%s" +
                "\"owner\":\"mail\",\"reason\":\"5/s, callers queue for up to 0.5 s\"}";
            final HttpResponse<String> bad = call(server, "PUT", "/v1/policies/mail", String.format(waiting, "\"algorithm\":\"FIXED_WINDOW\","));
            assertEquals(400, bad.statusCode());
            assertTrue(bad.body().contains("policy.maxWait: a WAIT policy needs the longest wait") &&
                bad.body().contains("policy.algorithm: WAIT needs a TOKEN_BUCKET or GCRA"), bad.body());
            assertEquals(200, call(server, "PUT", "/v1/policies/mail", String.format(waiting, "\"maxWait\":\"0.5s\",")).statusCode());

            assertEquals(ReasonCode.ALLOWED, client.acquireBlocking(Descriptor.of("acme", "/v1/mail"), 1).reason());
            final long start = System.nanoTime();
            final Decision second = client.acquireBlocking(Descriptor.of("acme", "/v1/mail"), 1);
            final long waited = System.nanoTime() - start;
            assertTrue(second.allowed());
            assertEquals(ReasonCode.RESERVED, second.reason());
            assertEquals(SECOND / 5, second.waitNanos(), "one token at 5/s");
            assertTrue(waited >= SECOND / 5, "acquireBlocking waited the reservation out: " + waited + " ns");
            final long asyncStart = System.nanoTime();
            final Decision async = client.acquire(Descriptor.of("acme", "/v1/mail"), 1).get();
            final long asyncWaited = System.nanoTime() - asyncStart;
            assertEquals(2 * SECOND / 5, async.waitNanos(), "behind the one before it");
            assertTrue(asyncWaited >= 2 * SECOND / 5, "an async caller's future completes once the wait has passed: " + asyncWaited + " ns");
            final Decision refused = client.acquireBlocking(Descriptor.of("acme", "/v1/mail"), 1);
            assertFalse(refused.allowed(), "0.6 s is beyond the longest wait");
            assertEquals(SECOND / 10, refused.retryAfterNanos(), "its tokens exist in 0.6 s: a retry in 0.1 s is reserved");
        }
    }
}
