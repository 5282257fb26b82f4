package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.server.engine.MonotonicClock;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(60)
class AdminApiTest
{
    private static final String TOKEN = "test-token-0123456789abcdef";
    private static final String ORDERS_V2 = "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"period\":\"1s\"," +
        "\"burst\":1,\"owner\":\"team-orders\",\"reason\":\"tighten during the incident\"}";

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newHttpClient();

    static HttpResponse<String> call(final HttpClient http, final int port, final String method, final String path, final String body,
        final String token) throws Exception
    {
        final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
            .header("X-Limiter-Actor", "alice");
        if (token != null)
        {
            request.header("Authorization", "Bearer " + token);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> call(final StoreServer server, final String method, final String path, final String body) throws Exception
    {
        return call(http, server.adminPort(), method, path, body, TOKEN);
    }

    private StoreServer start(final ServerConfig config) throws InterruptedException
    {
        return new StoreServer(config, new ManualClock(SECOND)).start();
    }

    /** Until the client holds a policy set (it asks when its connection opens). */
    private static void awaitPolicies(final LimiterClient client) throws InterruptedException
    {
        Await.until("the client to hold the policy set", Duration.ofSeconds(3), () -> client.policies().version() > 0);
        assertTrue(client.policies().version() > 0, "the client holds the policy set");
    }

    private static int burstOf(final LimiterClient client)
    {
        final Decision decision = client.acquireBlocking(Descriptor.of("acme-" + System.nanoTime(), "/v1/orders/1"), 1);
        return (int)decision.limit();
    }

    @Test
    void aChangeIsInForceAtOnceAndARollbackRestoresTheOldLimitWithAuditRecords() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            assertEquals(5, burstOf(client));
            final HttpResponse<String> put = call(server, "PUT", "/v1/policies/orders", ORDERS_V2);
            assertEquals(200, put.statusCode(), put.body());
            assertTrue(put.body().contains("\"version\": \"2\""), put.body());
            assertEquals(1, burstOf(client), "version 2 decides the next request");

            final HttpResponse<String> rollback = call(server, "POST", "/v1/policies/orders/rollback",
                "{\"toVersion\":1,\"reason\":\"v2 starved checkout\"}");
            assertEquals(200, rollback.statusCode(), rollback.body());
            assertEquals(5, burstOf(client), "version 3 (= 1) decides again");

            final HttpResponse<String> history = call(server, "GET", "/v1/policies/orders/history", null);
            assertEquals(200, history.statusCode());
            assertTrue(history.body().contains("\"rolledBackFrom\": \"1\""), history.body());
            final HttpResponse<String> audit = call(server, "GET", "/v1/audit?policy=orders", null);
            assertTrue(audit.body().contains("POLICY_UPDATED") && audit.body().contains("POLICY_ROLLED_BACK"), audit.body());
            assertTrue(audit.body().contains("\"actor\": \"alice\"") && audit.body().contains("v2 starved checkout"), audit.body());
            assertEquals(200, call(server, "GET", "/v1/audit?since=2020-01-01T00:00:00Z&limit=1", null).statusCode());

            final HttpResponse<String> one = call(server, "GET", "/v1/policies/orders", null);
            assertTrue(one.body().contains("\"version\": \"3\""), one.body());
            final HttpResponse<String> all = call(server, "GET", "/v1/policies", null);
            assertTrue(all.body().contains("\"id\": \"hot\"") && all.body().contains("\"defaultPolicy\""), all.body());
        }
    }

    @Test
    void aCallWithoutTheRightTokenIsRefusedAndChangesNothing() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN)))
        {
            final long before = server.policyState().setVersion();
            for (final String token : new String[] {null, "wrong-token-0123456789", TOKEN + "x"})
            {
                final HttpResponse<String> put = call(http, server.adminPort(), "PUT", "/v1/policies/orders", ORDERS_V2, token);
                assertEquals(401, put.statusCode());
                assertTrue(put.body().contains("bearer token"), put.body());
                assertTrue(put.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Bearer"));
                assertEquals(401, call(http, server.adminPort(), "GET", "/v1/policies", null, token).statusCode());
            }
            assertEquals(before, server.policyState().setVersion());
            assertEquals(1, server.policyState().current("orders").getVersion());
            // The open endpoints stay open.
            assertEquals(200, call(http, server.adminPort(), "GET", "/health", null, null).statusCode());
        }
    }

    @Test
    void badChangesAreRefusedWithFieldErrorsAndChangeNothing() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN)))
        {
            final HttpResponse<String> invalid = call(server, "PUT", "/v1/policies/orders",
                "{\"rate\":0,\"burst\":1,\"selector\":{\"route\":\"/v1/orders/{id}\"},\"owner\":\"\"}");
            assertEquals(400, invalid.statusCode());
            assertTrue(invalid.body().contains("policy.rate:") && invalid.body().contains("policy.owner:") &&
                invalid.body().contains("policy.reason:"), invalid.body());

            final HttpResponse<String> unknownField = call(server, "PUT", "/v1/policies/orders",
                ORDERS_V2.replace("\"selector\":{", "\"selector\":{\"colour\":\"red\","));
            assertEquals(400, unknownField.statusCode());
            assertTrue(unknownField.body().contains("colour"), unknownField.body());

            final HttpResponse<String> window = call(server, "PUT", "/v1/policies/orders",
                ORDERS_V2.replace("\"rate\":1,", "\"rate\":3000000000,\"algorithm\":\"SLIDING_WINDOW\",")
                    .replace("\"burst\":1,", "\"burst\":7,"));
            assertEquals(400, window.statusCode(), window.body());
            assertTrue(window.body().contains("policy.burst: a SLIDING_WINDOW grants `rate` per window and has no burst of its own") &&
                window.body().contains("policy.rate: a SLIDING_WINDOW counts at most 2147483647 per period"), window.body());

            assertEquals(400, call(server, "PUT", "/v1/policies/orders", "{not json").statusCode());
            assertEquals(400, call(server, "PUT", "/v1/policies/other", ORDERS_V2).statusCode(), "id in body differs from path");
            assertEquals(400, call(server, "PUT", "/v1/policies/orders", "").statusCode());
            assertEquals(400, call(server, "PUT", "/v1/policies/orders", ORDERS_V2.replace("\"rate\":1,", "\"rate\":-5,")).statusCode());
            assertEquals(400, call(server, "POST", "/v1/policies/orders/rollback", "{\"toVersion\":7,\"reason\":\"x\"}").statusCode());
            assertEquals(404, call(server, "POST", "/v1/policies/none/rollback", "{\"toVersion\":1,\"reason\":\"x\"}").statusCode());
            assertEquals(404, call(server, "GET", "/v1/policies/none", null).statusCode());
            assertEquals(404, call(server, "DELETE", "/v1/policies/none?reason=x", null).statusCode());
            assertEquals(400, call(server, "DELETE", "/v1/policies/orders", null).statusCode(), "a reason is required");
            assertEquals(400, call(server, "GET", "/v1/audit?since=yesterday", null).statusCode());
            assertEquals(400, call(server, "GET", "/v1/audit?limit=0", null).statusCode());
            assertEquals(405, call(server, "POST", "/v1/policies", "{}").statusCode());
            assertEquals(404, call(server, "GET", "/v1/nothing", null).statusCode());

            assertEquals(1, server.policyState().current("orders").getVersion(), "nothing changed");
            assertEquals(1, server.policyState().audit(r -> true, 100).size(), "only the seed is audited");
        }
    }

    @Test
    void withoutAConfiguredTokenOneIsGeneratedReadableOnlyByItsOwner() throws Exception
    {
        final Path data = dir.resolve("data");
        try (StoreServer server = start(TestNode.config(dir, 0, 1).dataDir(data)))
        {
            final Path file = data.resolve("admin-token");
            assertTrue(Files.exists(file));
            assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE), Files.getPosixFilePermissions(file));
            final String token = Files.readString(file).strip();
            assertTrue(token.length() >= 32);
            assertEquals(200, call(http, server.adminPort(), "GET", "/v1/policies", null, token).statusCode());
        }
        // A restart reuses it.
        final String first = Files.readString(data.resolve("admin-token"));
        try (StoreServer server = start(TestNode.config(dir, 0, 1).dataDir(data)))
        {
            assertEquals(first, Files.readString(data.resolve("admin-token")));
        }
        assertThrows(IllegalArgumentException.class, () -> new StoreServer(TestNode.config(dir, 0, 1).adminToken("short")));
        assertFalse(Files.exists(dir.resolve("admin-token")), "nothing written outside the data directory");

        // As ssh refuses a key others can read, a node refuses such a token file and says how to fix it.
        Files.setPosixFilePermissions(data.resolve("admin-token"), java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        final IllegalArgumentException open = assertThrows(IllegalArgumentException.class,
            () -> new StoreServer(TestNode.config(dir, 0, 1).dataDir(data)));
        assertTrue(open.getMessage().contains("chmod 600"), open.getMessage());
        assertEquals(first, Files.readString(data.resolve("admin-token")), "the file is left as it was");
    }

    @Test
    void anExemptTenantBypassesItsLimitUntilTheExpiryAndNotAMomentLonger() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final long expiresAt = System.currentTimeMillis() + 1500;
            final String body = "{\"tenant\":\"vip\",\"route\":\"/v1/orders/{id}\",\"owner\":\"sales\",\"reason\":\"launch demo\"," +
                "\"expiresAt\":\"" + java.time.Instant.ofEpochMilli(expiresAt) + "\"}";
            final HttpResponse<String> put = call(server, "PUT", "/v1/exemptions/vip-demo", body);
            assertEquals(200, put.statusCode(), put.body());

            for (int i = 0; i < 20; i++)
            {
                final Decision exempt = client.acquireBlocking(Descriptor.of("vip", "/v1/orders/1"), 1);
                if (System.currentTimeMillis() >= expiresAt - 100)
                {
                    break; // too close to the expiry to say which side of it the node decided on
                }
                assertTrue(exempt.allowed(), exempt.toString());
                assertEquals(dev.limiter.protocol.ReasonCode.EXEMPT, exempt.reason());
            }
            final Decision other = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 5);
            assertEquals(dev.limiter.protocol.ReasonCode.ALLOWED, other.reason(), "other tenants are not covered");
            assertTrue(call(server, "GET", "/v1/exemptions", null).body().contains("\"id\": \"vip-demo\""));

            while (System.currentTimeMillis() < expiresAt)
            {
                Thread.sleep(5);
            }
            final Decision after = client.acquireBlocking(Descriptor.of("vip", "/v1/orders/1"), 5);
            assertEquals(dev.limiter.protocol.ReasonCode.ALLOWED, after.reason(), "charged from the expiry on: " + after);
            assertFalse(client.acquireBlocking(Descriptor.of("vip", "/v1/orders/1"), 1).allowed(), "the burst of 5 is spent");

            Await.until("the tick to remove the expired exemption", Duration.ofSeconds(3),
                () -> server.policyState().exemptions().isEmpty());
            assertTrue(server.policyState().exemptions().isEmpty(), "the tick removed it");
            final String audit = call(server, "GET", "/v1/audit?policy=exemption:vip-demo", null).body();
            assertTrue(audit.contains("EXEMPTION_CREATED") && audit.contains("EXEMPTION_EXPIRED"), audit);
            assertTrue(audit.contains("decisions bypassed in all"), audit);
        }
    }

    @Test
    void anUnauthenticatedExemptionIsRefusedAndBypassesNothing() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final String body = "{\"tenant\":\"vip\",\"owner\":\"x\",\"reason\":\"y\",\"expiresAt\":\"" +
                java.time.Instant.now().plusSeconds(600) + "\"}";
            assertEquals(401, call(http, server.adminPort(), "PUT", "/v1/exemptions/sneaky", body, null).statusCode());
            assertEquals(401, call(http, server.adminPort(), "PUT", "/v1/exemptions/sneaky", body, "not-the-token-0123456789").statusCode());
            assertTrue(server.policyState().exemptions().isEmpty());
            assertEquals(dev.limiter.protocol.ReasonCode.ALLOWED, client.acquireBlocking(Descriptor.of("vip", "/v1/orders/1"), 1).reason());
            final HttpResponse<String> invalid = call(server, "PUT", "/v1/exemptions/no-expiry", "{\"tenant\":\"vip\",\"owner\":\"x\",\"reason\":\"y\"}");
            assertEquals(400, invalid.statusCode());
            assertTrue(invalid.body().contains("exemption.expiresAt"), invalid.body());
            assertEquals(404, call(server, "DELETE", "/v1/exemptions/none?reason=x", null).statusCode());
        }
    }

    private static long metric(final String metrics, final String series)
    {
        for (final String line : metrics.split("\n"))
        {
            if (line.startsWith(series + " "))
            {
                return (long)Double.parseDouble(line.substring(series.length() + 1));
            }
        }
        return 0;
    }

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
            final String metrics = call(http, server.adminPort(), "GET", "/metrics", null, null).body();
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
            final String metrics = call(http, server.adminPort(), "GET", "/metrics", null, null).body();
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
            assertEquals(1, metric(call(http, server.adminPort(), "GET", "/metrics", null, null).body(),
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

    @Test
    void aScheduledVersionDecidesFromItsEffectiveTimeOn() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final long from = System.currentTimeMillis() + 1000;
            final HttpResponse<String> put = call(server, "PUT", "/v1/policies/orders",
                ORDERS_V2.replace("\"owner\"", "\"effectiveFrom\":\"" + java.time.Instant.ofEpochMilli(from) + "\",\"owner\""));
            assertEquals(200, put.statusCode(), put.body());
            assertEquals(5, burstOf(client), "version 1 until the effective time");
            final long deadline = from + 3000;
            int burst = 5;
            while (burst == 5 && System.currentTimeMillis() < deadline)
            {
                Thread.sleep(20);
                burst = burstOf(client);
            }
            assertEquals(1, burst, "version 2 decides once its time has come");
            assertTrue(System.currentTimeMillis() >= from, "not before");
            assertTrue(call(server, "GET", "/v1/audit?policy=orders", null).body().contains("POLICY_IN_FORCE"));
        }
    }

    private static long versionFor(final LimiterClient client, final String tenant)
    {
        return client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1).policyVersion();
    }

    @Test
    void aRolloutDecidesListedTenantsAndAStableShareWhileTheOthersStayOnThePreviousVersion() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 2).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final String step = ORDERS_V2.replace("\"reason\"", "\"rollout\":{\"tenants\":[\"vip\"],\"percent\":%d,\"othersInShadow\":true},\"reason\"");
            final HttpResponse<String> first = call(server, "PUT", "/v1/policies/orders", String.format(step, 0));
            assertEquals(200, first.statusCode(), first.body());
            assertTrue(first.body().contains("\"fallback\""), "the cluster names the version the others stay on: " + first.body());
            assertEquals(2, versionFor(client, "vip"), "listed");
            assertEquals(1, versionFor(client, "tenant-a"), "0%: everyone else on version 1");

            assertEquals(200, call(server, "PUT", "/v1/policies/orders", String.format(step, 50)).statusCode());
            final java.util.Set<String> onNew = new java.util.HashSet<>();
            for (int t = 0; t < 200; t++)
            {
                final long version = versionFor(client, "t" + t);
                assertTrue(version == 3 || version == 1, "the newest step (3) or the version before the rollout (1): " + version);
                if (version == 3)
                {
                    onNew.add("t" + t);
                }
            }
            assertTrue(onNew.size() > 60 && onNew.size() < 140, "about half of 200 tenants: " + onNew.size());
            for (int t = 0; t < 200; t += 7)
            {
                assertEquals(onNew.contains("t" + t) ? 3 : 1, versionFor(client, "t" + t), "stable per tenant");
            }
            final String metrics = call(http, server.adminPort(), "GET", "/metrics", null, null).body();
            assertTrue(metrics.contains("limiter_policy_rollout_percent{policy=\"orders\"} 50.0"), metrics);
            assertTrue(metric(metrics, "limiter_shadow_decisions_total{outcome=\"would_allow\",policy=\"orders\"}") +
                metric(metrics, "limiter_shadow_decisions_total{outcome=\"would_deny\",policy=\"orders\"}") > 0,
                "the tenants left out were evaluated against the new version in shadow");

            final HttpResponse<String> moved = call(server, "PUT", "/v1/policies/orders",
                String.format(step, 10).replace("/v1/orders/{id}", "/v1/orders/{order}/x"));
            assertEquals(400, moved.statusCode(), "the selector stays during a rollout: " + moved.body());

            assertEquals(200, call(server, "PUT", "/v1/policies/orders", ORDERS_V2.replace("incident", "incident, rolled out")).statusCode());
            assertEquals(4, versionFor(client, "tenant-a"), "complete: every tenant on the new version");
            final String audit = call(server, "GET", "/v1/audit?policy=orders", null).body();
            assertTrue(audit.contains("POLICY_ROLLOUT") && audit.contains("others on version 1"), audit);
        }
    }

    @Test
    void connectedSdksHoldTheSetAndArePushedEveryChangeWithinOneSecond() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            Await.until("the client to fetch the policy set on connect", Duration.ofSeconds(2),
                () -> client.policies().version() != 0);
            assertEquals(3, client.policies().version(), "the file's set version, fetched on connect");
            assertTrue(client.policies().current().orElseThrow().policies().getPoliciesList().stream().anyMatch(p -> p.getId().equals("orders")));

            final long changedAt = System.nanoTime();
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", ORDERS_V2).statusCode());
            final Duration leftOfTheSecond = Duration.ofNanos(1_000_000_000L - (System.nanoTime() - changedAt));
            Await.until("version 4 pushed to the client", leftOfTheSecond, () -> client.policies().version() == 4);
            assertEquals(4, client.policies().version(), "pushed within a second");
            assertEquals(1, client.policies().current().orElseThrow().policies().getPoliciesList().stream()
                .filter(p -> p.getId().equals("orders")).findFirst().orElseThrow().getRate());

            final RawConnection.Answer malformed = RawConnection.exchange(server.port(), dev.limiter.protocol.MessageType.POLICIES, new byte[0]);
            assertTrue(malformed.isError() && malformed.errorMessage().contains("POLICIES body is empty"), malformed.toString());
        }
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient quiet = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).followPolicies(false).build())
        {
            Thread.sleep(200);
            assertEquals(0, quiet.policies().version(), "following policies is optional");
        }
        assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().policyTtl(Duration.ofMillis(10)));
    }

    @Test
    void aChangeBasedOnAnOlderVersionIsRefusedWithAConflict() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN)))
        {
            final String basedOnOne = ORDERS_V2.replace("\"owner\"", "\"version\":\"1\",\"owner\"");
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", basedOnOne).statusCode(), "version 1 is the newest: accepted");
            final HttpResponse<String> stale = call(server, "PUT", "/v1/policies/orders", basedOnOne.replace("\"rate\":1,", "\"rate\":2,"));
            assertEquals(409, stale.statusCode(), stale.body());
            assertTrue(stale.body().contains("is at version 2, not 1"), stale.body());
            assertEquals(2, server.policyState().current("orders").getVersion(), "nothing changed");
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", ORDERS_V2.replace("\"rate\":1,", "\"rate\":2,")).statusCode(),
                "without a version there is no check");
        }
    }

    @Test
    void aRequestIsChargedAgainstEveryStackedScopeOrNoneAndTheAnswerNamesTheLimitingPolicy() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // The route's global budget (3, refilled 1/s) stacked on the per-tenant orders policy (burst 5).
            final String global = "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"burst\":%d,\"scope\":\"GLOBAL\"," +
                "\"stacked\":true,\"owner\":\"platform\",\"reason\":\"route capacity\"}";
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", String.format(global, 3)).statusCode());

            final Decision first = client.acquireBlocking(Descriptor.of("a", "/v1/orders/1"), 1);
            assertTrue(first.allowed());
            assertEquals("orders-global", first.policyId(), "allowed: the answer names the tightest scope");
            assertEquals(2, first.remaining());
            assertTrue(client.acquireBlocking(Descriptor.of("b", "/v1/orders/1"), 1).allowed());
            assertTrue(client.acquireBlocking(Descriptor.of("c", "/v1/orders/1"), 1).allowed());
            for (int i = 0; i < 3; i++)
            {
                final Decision refused = client.acquireBlocking(Descriptor.of("d", "/v1/orders/1"), 1);
                assertFalse(refused.allowed());
                assertEquals("orders-global", refused.policyId(), "denied: the answer names the scope that refused");
                assertTrue(refused.retryAfter().toMillis() > 0);
            }
            // A roomier global budget (a new version, new bucket): d's own bucket was never charged above.
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", String.format(global, 1000)).statusCode());
            int allowed = 0;
            Decision last = null;
            for (int i = 0; i < 6; i++)
            {
                last = client.acquireBlocking(Descriptor.of("d", "/v1/orders/1"), 1);
                allowed += last.allowed() ? 1 : 0;
            }
            assertEquals(5, allowed, "d's tenant bucket was full: the refused requests charged none of its scopes");
            assertEquals("orders", last.policyId(), "now the tenant's own policy is what refuses");
            final String metrics = call(http, server.adminPort(), "GET", "/metrics", null, null).body();
            assertTrue(metric(metrics, "limiter_decisions_total{outcome=\"denied\",policy=\"orders-global\"}") >= 3, metrics);
        }
    }

    @Test
    void splitAcrossShardsIsRefusedWhereItCannotHoldAndSaysWhy() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 4).adminToken(TOKEN)))
        {
            final String split = "{\"selector\":{\"route\":\"/all\"},\"owner\":\"p\",\"reason\":\"r\",\"splitAcrossShards\":true,%s}";
            final HttpResponse<String> tenant = call(server, "PUT", "/v1/policies/everyone", String.format(split, "\"rate\":100"));
            assertEquals(400, tenant.statusCode());
            assertTrue(tenant.body().contains("splitAcrossShards: only a GLOBAL bucket is split") &&
                tenant.body().contains("was TENANT"), tenant.body());
            final HttpResponse<String> leases = call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"scope\":\"GLOBAL\",\"maxConcurrent\":10"));
            assertEquals(400, leases.statusCode());
            assertTrue(leases.body().contains("splitAcrossShards: not with maxConcurrent"), leases.body());
            final HttpResponse<String> small = call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"scope\":\"GLOBAL\",\"rate\":100,\"burst\":3"));
            assertEquals(400, small.statusCode());
            assertTrue(small.body().contains("has splitAcrossShards: on a node with 4 shards") &&
                small.body().contains("raise the burst to at least 4"), small.body());
            final HttpResponse<String> leased = call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"scope\":\"GLOBAL\",\"rate\":100,\"tokenLease\":{}"));
            assertEquals(400, leased.statusCode());
            assertTrue(leased.body().contains("splitAcrossShards: not with tokenLease"), leased.body());
            final HttpResponse<String> stacked = call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"rate\":100,\"stacked\":true"));
            assertEquals(400, stacked.statusCode(), "a stacked TENANT budget is not split either");
            assertTrue(stacked.body().contains("splitAcrossShards: only a GLOBAL bucket is split"), stacked.body());
            assertEquals(null, server.policyState().current("everyone"), "nothing refused was stored");
            assertEquals(200, call(server, "PUT", "/v1/policies/everyone",
                String.format(split, "\"scope\":\"GLOBAL\",\"rate\":100,\"burst\":4")).statusCode());
        }
    }

    @Test
    void aStackedGlobalBudgetTooSmallToSplitIntoOneShareAShardIsRefused() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 2).adminToken(TOKEN)))
        {
            final String global = "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,%s\"scope\":\"GLOBAL\",\"stacked\":true," +
                "\"owner\":\"p\",\"reason\":\"r\"}";
            final HttpResponse<String> refused = call(server, "PUT", "/v1/policies/orders-global", String.format(global, ""));
            assertEquals(400, refused.statusCode());
            assertTrue(refused.body().contains("split into 2 equal shares") && refused.body().contains("raise the burst to at least 2"),
                refused.body());
            assertEquals(null, server.policyState().current("orders-global"));
            final HttpResponse<String> extra = call(server, "PUT", "/v1/policies/orders-global", String.format(global,
                "\"burst\":2,\"limits\":[{\"rate\":1,\"period\":\"3600s\",\"algorithm\":\"FIXED_WINDOW\"}],"));
            assertEquals(400, extra.statusCode(), "every limit of a split budget is split alike");
            assertTrue(extra.body().contains("in its limits[0] a window") && extra.body().contains("rate of 1 cannot be split into 2 shares"),
                extra.body());
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", String.format(global, "\"burst\":2,")).statusCode());
        }
    }

    @Test
    void aStackedGlobalBudgetOnSeveralShardsKeepsAnEqualShareOnEachAndNeverAdmitsMoreThanTheWhole() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 4).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // The route's capacity: 40 tokens, one more per hour, stacked on the per-tenant orders policy (burst 5).
            // On four shards each keeps a share: 10 tokens, one more every four hours.
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", "{\"selector\":{\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":1,\"period\":\"3600s\",\"burst\":40,\"scope\":\"GLOBAL\",\"stacked\":true,\"owner\":\"platform\"," +
                "\"reason\":\"route capacity\"}").statusCode());
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-hot", "{\"selector\":{\"tenant\":\"hot\",\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":1000,\"burst\":1000,\"owner\":\"platform\",\"reason\":\"a big tenant\"}").statusCode());
            // One tenant alone gets its shard's share, not the whole budget (the cost of splitting).
            int hotAllowed = 0;
            for (int i = 0; i < 30; i++)
            {
                final Decision decision = orders(client, "hot", "u");
                if (decision.allowed())
                {
                    hotAllowed++;
                    continue;
                }
                assertEquals("orders-global", decision.policyId(), decision.toString());
                assertEquals(10, decision.limit(), "the answer shows the share that refused: " + decision);
                assertEquals(0, decision.remaining());
                assertTrue(decision.retryAfter().toMinutes() > 60, "a token returns to the share every four hours: " + decision);
            }
            assertEquals(10, hotAllowed);
            // Many tenants over every shard take the other shares, and never more than the whole 40.
            int allowed = hotAllowed;
            for (int t = 0; t < 160; t++)
            {
                final Decision decision = orders(client, "tenant-" + t, "u");
                allowed += decision.allowed() ? 1 : 0;
                if (!decision.allowed())
                {
                    assertEquals("orders-global", decision.policyId(), decision.toString());
                }
            }
            assertEquals(40, allowed, "every share spent, none exceeded");
            // Four hours refill one token on each share: the hot tenant gets exactly its shard's one.
            clock.advance(4 * 3600 * SECOND);
            assertTrue(orders(client, "hot", "u").allowed());
            assertFalse(orders(client, "hot", "u").allowed());
            final String metrics = call(http, server.adminPort(), "GET", "/metrics", null, null).body();
            assertTrue(metric(metrics, "limiter_decisions_total{outcome=\"allowed\",policy=\"orders-global\"}") >= 1, metrics);
        }
    }

    @Test
    void tenantScopedStackedPoliciesChargeAllOrNoneOnANodeWithSeveralShards() throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 4).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // Each user's allowance (burst 2) stacked on the per-tenant orders policy (burst 5): both on the tenant's shard.
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-user", "{\"selector\":{\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":1,\"burst\":2,\"scope\":\"PRINCIPAL\",\"stacked\":true,\"owner\":\"platform\",\"reason\":\"per user\"}").statusCode());
            // Twelve tenants, spread over the four shards.
            for (int t = 0; t < 12; t++)
            {
                final String tenant = "tenant-" + t;
                assertTrue(orders(client, tenant, "u1").allowed());
                assertTrue(orders(client, tenant, "u1").allowed());
                final Decision userSpent = orders(client, tenant, "u1");
                assertFalse(userSpent.allowed(), tenant);
                assertEquals("orders-user", userSpent.policyId(), "the user's budget refused: " + tenant);
                assertTrue(orders(client, tenant, "u2").allowed());
                assertTrue(orders(client, tenant, "u2").allowed());
                // The tenant's bucket holds 5: 4 charged so far, none for the refused request.
                assertTrue(orders(client, tenant, "u3").allowed(), "a refused request charged none of its budgets: " + tenant);
                final Decision tenantSpent = orders(client, tenant, "u3");
                assertFalse(tenantSpent.allowed(), tenant);
                assertEquals("orders", tenantSpent.policyId(), "now the tenant's own policy refuses: " + tenant);
            }
        }
    }

    @Test
    void onSeveralShardsARequestWhoseOwnPolicyIsGlobalIsNotChargedAgainstStackedPolicies() throws Exception
    {
        try (StoreServer server = start(TestNode.config(dir, 0, 4).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // Each tenant's share of the GLOBAL "hot" route, stacked on it: the two buckets cannot share a shard.
            assertEquals(200, call(server, "PUT", "/v1/policies/hot-per-tenant", "{\"selector\":{\"route\":\"/hot\"}," +
                "\"rate\":100,\"burst\":100,\"scope\":\"TENANT\",\"stacked\":true,\"owner\":\"platform\",\"reason\":\"share\"}").statusCode());
            final LimiterRequestException refused = assertThrows(LimiterRequestException.class,
                () -> client.acquireBlocking(Descriptor.of("acme", "/hot"), 1));
            assertTrue(refused.getMessage().contains("'hot' is GLOBAL-scoped") && refused.getMessage().contains("--shards 1"),
                refused.getMessage());
            assertTrue(client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1).allowed(), "requests no stacked policy matches are decided");
        }
    }

    /** One call, decided by the node (never by the SDK on its own). */
    private static Decision orders(final LimiterClient client, final String tenant, final String user)
    {
        final Decision decision = client.acquireBlocking(Descriptor.builder().tenant(tenant).principal(user).route("/v1/orders/1").build(), 1);
        assertFalse(decision.degraded(), "decided by the node: " + decision);
        return decision;
    }

    @Test
    void underSaturationLowerPrioritiesAreRefusedFirstWhileTheReserveServesHigherOnes() throws Exception
    {
        // One shard holds the whole pool and reserve; on two, each shard holds half of both, so the
        // premium tenant finds the reserve of its own shard only (2 of the 4).
        reserveServesHigherPriorities(1, 4);
        reserveServesHigherPriorities(2, 2);
    }

    private void reserveServesHigherPriorities(final int shards, final int premiumExpected) throws Exception
    {
        final ManualClock clock = new ManualClock(SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, shards).adminToken(TOKEN), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            // Premium tenant acme: its own policy ranks 10. Everyone shares a route pool of 10, of which 4
            // are kept for requests ranking 10 or more.
            assertEquals(200, call(server, "PUT", "/v1/policies/acme-orders", "{\"selector\":{\"tenant\":\"acme\",\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":100,\"priority\":10,\"owner\":\"sales\",\"reason\":\"premium\"}").statusCode());
            final HttpResponse<String> pool = call(server, "PUT", "/v1/policies/orders-pool", "{\"selector\":{\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":1,\"period\":\"60s\",\"burst\":10,\"scope\":\"GLOBAL\",\"stacked\":true,\"reserve\":{\"tokens\":4,\"minPriority\":10}," +
                "\"owner\":\"platform\",\"reason\":\"shared capacity\"}");
            assertEquals(200, pool.statusCode(), pool.body());

            int standard = 0;
            for (int t = 0; t < 20; t++)
            {
                final Decision d = client.acquireBlocking(Descriptor.of("tenant-" + t, "/v1/orders/1"), 1);
                assertFalse(d.degraded(), "decided by the node: " + d);
                standard += d.allowed() ? 1 : 0;
                if (!d.allowed())
                {
                    assertEquals("orders-pool", d.policyId(), "refused by the shared pool's reserve");
                    assertTrue(d.retryAfter().toSeconds() > 0, d.toString());
                }
            }
            assertEquals(6, standard, "standard tenants stop where the reserve begins, on " + shards + " shards");
            int premium = 0;
            for (int i = 0; i < 6; i++)
            {
                final Decision d = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
                assertFalse(d.degraded(), "decided by the node: " + d);
                premium += d.allowed() ? 1 : 0;
            }
            assertEquals(premiumExpected, premium, "the premium tenant still gets the reserve, then the pool is empty for everyone");

            final HttpResponse<String> bad = call(server, "PUT", "/v1/policies/orders-pool2", "{\"selector\":{\"route\":\"/v2\"}," +
                "\"rate\":5,\"reserve\":{\"tokens\":5},\"owner\":\"p\",\"reason\":\"r\"}");
            assertEquals(400, bad.statusCode());
            assertTrue(bad.body().contains("set stacked: true") && bad.body().contains("below the burst"), bad.body());
        }
    }

    @Test
    void withTheClusterGoneFailOpenPoliciesSpendTheirEmergencyBudgetAndFailClosedOnesRefuseWithinTheDeadline() throws Exception
    {
        final java.util.List<String> pages = new java.util.concurrent.CopyOnWriteArrayList<>();
        final StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofMillis(50))
            .circuit(3, Duration.ofMillis(300)).onOutage((policy, mode, message) -> pages.add(policy + " " + mode)).build())
        {
            final io.micrometer.core.instrument.simple.SimpleMeterRegistry meters = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
            dev.limiter.client.LimiterMetrics.bind(client, meters);
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":100," +
                "\"burst\":100,\"failureMode\":\"OPEN\",\"emergency\":{\"percent\":10},\"owner\":\"o\",\"reason\":\"r\"}").statusCode());
            assertEquals(200, call(server, "PUT", "/v1/policies/strict", "{\"selector\":{\"route\":\"/strict\"},\"rate\":20,\"scope\":\"GLOBAL\"," +
                "\"failureMode\":\"CLOSED\",\"owner\":\"o\",\"reason\":\"r\"}").statusCode());
            final long wanted = server.policyState().setVersion();
            Await.until("the client to hold set version " + wanted, Duration.ofSeconds(3),
                () -> client.policies().version() == wanted);
            assertEquals(wanted, client.policies().version());
            final Decision healthy = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
            assertFalse(healthy.degraded(), "the cluster decides while it answers");

            server.close();
            int allowed = 0;
            long slowestNanos = 0;
            for (int i = 0; i < 30; i++)
            {
                final long start = System.nanoTime();
                final Decision d = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
                slowestNanos = Math.max(slowestNanos, System.nanoTime() - start);
                assertTrue(d.degraded(), d.toString());
                assertEquals(dev.limiter.protocol.ReasonCode.LOCAL_EMERGENCY, d.reason());
                allowed += d.allowed() ? 1 : 0;
            }
            assertTrue(allowed >= 10 && allowed <= 16, "10% of a burst of 100, plus 10/s of refill while the loop ran: " + allowed);
            assertTrue(slowestNanos < 250_000_000L, "no call waits long past its 50 ms deadline: " + slowestNanos / 1_000_000 + " ms");
            assertTrue(client.stats().circuitOpen(), "consecutive failures opened the circuit");

            final Decision closed = client.acquireBlocking(Descriptor.of("acme", "/strict"), 1);
            assertFalse(closed.allowed());
            assertTrue(closed.degraded());
            assertEquals(dev.limiter.protocol.ReasonCode.CLUSTER_UNAVAILABLE, closed.reason());
            assertEquals("strict", closed.policyId());
            assertTrue(pages.contains("strict CLOSED"), pages.toString());

            assertEquals(allowed, meters.get("limiter.sdk.local.decisions").tags("policy", "orders", "mode", "OPEN", "outcome", "allowed")
                .functionCounter().count(), 0.0);
            assertEquals(1, meters.get("limiter.sdk.local.decisions").tags("policy", "strict", "mode", "CLOSED", "outcome", "denied")
                .functionCounter().count(), 0.0);
            assertEquals(1, meters.get("limiter.sdk.circuit.open").gauge().value(), 0.0);
            assertTrue(meters.get("limiter.sdk.degraded.seconds").functionCounter().count() > 0);
            assertEquals(wanted, meters.get("limiter.sdk.policy.version").gauge().value(), 0.0);
        }
        finally
        {
            server.close();
        }
    }

    @Test
    void sdksShareAFleetWideEmergencyBudgetAndEachGetsAllOfAPerInstanceOne() throws Exception
    {
        final StoreServer server = start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
        try (LimiterClient a = sdk(server); LimiterClient b = sdk(server))
        {
            // Fleet-wide (the default): 20% of burst 100 is 20 tokens for the fleet, 10 for each of two SDKs.
            assertEquals(200, call(server, "PUT", "/v1/policies/orders", "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":100," +
                "\"burst\":100,\"emergency\":{\"percent\":20},\"owner\":\"o\",\"reason\":\"r\"}").statusCode());
            assertEquals(200, call(server, "PUT", "/v1/policies/pinned", "{\"selector\":{\"route\":\"/pinned\"},\"rate\":100," +
                "\"burst\":100,\"emergency\":{\"percent\":20,\"perInstance\":true},\"owner\":\"o\",\"reason\":\"r\"}").statusCode());
            final long wanted = server.policyState().setVersion();
            Await.until("both SDKs to hold set version " + wanted + " and count two instances", Duration.ofSeconds(5),
                () -> a.policies().version() == wanted && b.policies().version() == wanted &&
                    a.stats().fleetInstances() == 2 && b.stats().fleetInstances() == 2);
            assertEquals(2, a.stats().fleetInstances(), "the node counts two SDK instances (each has two connections)");
            assertEquals(2, b.stats().fleetInstances());
            assertEquals(wanted, b.policies().version());
            System.gc(); // gauges on method references must survive a collection (Micrometer holds them weakly by default)
            final String scrape = server.metrics().scrape();
            assertTrue(scrape.contains("limiter_sdk_instances 2.0"), "the node's gauge says so too");
            assertTrue(scrape.contains("limiter_connections_open 4.0"), "two connections per SDK");
            try (LimiterClient c = sdk(server))
            {
                awaitFleet(List.of(a, b, c), 3);
            }
            awaitFleet(List.of(a, b), 2); // one left: the others are told

            server.close();
            for (final LimiterClient sdk : List.of(a, b))
            {
                final long start = System.nanoTime();
                int fleetWide = 0;
                int pinned = 0;
                for (int i = 0; i < 30; i++)
                {
                    fleetWide += sdk.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1).allowed() ? 1 : 0;
                    pinned += sdk.acquireBlocking(Descriptor.of("acme", "/pinned"), 1).allowed() ? 1 : 0;
                }
                final long refill = 1 + (System.nanoTime() - start) * 20 / 1_000_000_000L; // tokens at 20/s (whole budget) while the loop ran
                assertTrue(fleetWide >= 10 && fleetWide <= 10 + refill, "half of the fleet's 20 (and of its refill): " + fleetWide);
                assertTrue(pinned >= 20 && pinned <= 20 + refill, "all of the per-instance 20: " + pinned);
            }
        }
        finally
        {
            server.close();
        }
    }

    @Test
    void theBusiestTenantIsNamedByHotKeysAndTheNodesGaugeShowsItsShare() throws Exception
    {
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).adminToken(TOKEN)).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(2)).build())
        {
            dev.limiter.protocol.policy.HotKeyReport report = dev.limiter.protocol.policy.HotKeyReport.getDefaultInstance();
            final long until = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < until)
            {
                // Two thirds of the traffic from one tenant, the rest spread over 500; reports come about every second.
                final List<java.util.concurrent.CompletableFuture<Decision>> calls = new java.util.ArrayList<>();
                for (int i = 0; i < 3000; i++)
                {
                    calls.add(client.acquire(Descriptor.of(i % 3 == 0 ? "tenant-" + (i % 500) : "big-customer", "/v1/orders/1"), 1));
                }
                for (final java.util.concurrent.CompletableFuture<Decision> call : calls)
                {
                    call.get();
                }
                final HttpResponse<String> answer = call(server, "GET", "/v1/hot-keys", null);
                assertEquals(200, answer.statusCode(), answer.body());
                final dev.limiter.protocol.policy.HotKeyReport.Builder parsed = dev.limiter.protocol.policy.HotKeyReport.newBuilder();
                com.google.protobuf.util.JsonFormat.parser().merge(answer.body(), parsed);
                report = parsed.build();
                if (report.getShards(0).getTopCount() > 0)
                {
                    break;
                }
                Thread.sleep(200);
            }
            assertEquals(16, report.getSampleEvery());
            final dev.limiter.protocol.policy.HotKey top = report.getShards(0).getTop(0);
            assertEquals("big-customer", top.getKey(), report.toString());
            assertEquals("orders", top.getPolicyId());
            assertEquals(1, top.getPolicyVersion());
            assertEquals(dev.limiter.protocol.policy.Scope.TENANT, top.getScope());
            assertTrue(top.getShare() > 0.5 && top.getShare() < 0.85, "about two thirds: " + top.getShare());
            final String gauge = server.metrics().scrape().lines().filter(l -> l.startsWith("limiter_hot_key_share{shard=\"0\"}"))
                .findFirst().orElseThrow();
            assertTrue(Double.parseDouble(gauge.substring(gauge.lastIndexOf(' ') + 1)) > 0.5, gauge);
            assertEquals(401, call(http, server.adminPort(), "GET", "/v1/hot-keys", null, null).statusCode(), "tenant names need the token");
        }
    }

    @Test
    void aStackedRouteBudgetShowsAsTheHotKeyItIs() throws Exception
    {
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).adminToken(TOKEN)).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(2)).build())
        {
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", "{\"selector\":{\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":100000,\"burst\":100000,\"scope\":\"GLOBAL\",\"stacked\":true,\"owner\":\"o\",\"reason\":\"r\"}").statusCode());
            dev.limiter.protocol.policy.HotKeyReport report = dev.limiter.protocol.policy.HotKeyReport.getDefaultInstance();
            final long until = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < until)
            {
                // Every request touches its tenant's bucket and the route's one: half the touches are the route's.
                final List<java.util.concurrent.CompletableFuture<Decision>> calls = new java.util.ArrayList<>();
                for (int i = 0; i < 3000; i++)
                {
                    calls.add(client.acquire(Descriptor.of("tenant-" + (i % 300), "/v1/orders/1"), 1));
                }
                for (final java.util.concurrent.CompletableFuture<Decision> call : calls)
                {
                    call.get();
                }
                report = server.hotKeys();
                if (report.getShards(0).getTopCount() > 0)
                {
                    break;
                }
                Thread.sleep(200);
            }
            final dev.limiter.protocol.policy.HotKey top = report.getShards(0).getTop(0);
            assertEquals("orders-global", top.getPolicyId(), report.toString());
            assertEquals(dev.limiter.protocol.policy.Scope.GLOBAL, top.getScope());
            assertEquals("", top.getKey());
            assertTrue(top.getShare() > 0.35 && top.getShare() < 0.65, "about half of the touches: " + top.getShare());
        }
    }

    private static void awaitFleet(final List<LimiterClient> sdks, final int instances) throws InterruptedException
    {
        Await.until("every SDK to count " + instances + " instances", Duration.ofSeconds(5),
            () -> sdks.stream().allMatch(c -> c.stats().fleetInstances() == instances));
        for (final LimiterClient sdk : sdks)
        {
            assertEquals(instances, sdk.stats().fleetInstances());
        }
    }

    private static LimiterClient sdk(final StoreServer server)
    {
        return LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofMillis(50)).build();
    }

    @Test
    void aDegradedWindowReachesTheAuditLogOnceTheClusterAnswersAgain() throws Exception
    {
        StoreServer server = TestNode.start(dir, MonotonicClock.SYSTEM, 1);
        final int port = server.port();
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + port).deadline(Duration.ofMillis(50))
            .circuit(2, Duration.ofMillis(200)).build())
        {
            awaitPolicies(client);
            server.close();
            for (int i = 0; i < 5; i++)
            {
                assertTrue(client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1).degraded());
            }
            server = TestNode.start(dir, MonotonicClock.SYSTEM, 1, port);
            assertTrue(client.awaitConnected(Duration.ofSeconds(10)));
            final long deadline = System.currentTimeMillis() + 5000;
            while (client.stats().degradedWindowsReported() == 0 && System.currentTimeMillis() < deadline)
            {
                client.acquireBlocking(Descriptor.of("acme", "/v1/orders/2"), 1); // the first answer closes the circuit
                Thread.sleep(50);
            }
            assertEquals(1, client.stats().degradedWindowsReported());
            final java.util.List<dev.limiter.protocol.policy.AuditRecord> windows =
                server.policyState().audit(r -> r.getAction().equals("SDK_DEGRADED_WINDOW"), 10);
            assertEquals(1, windows.size());
            // orders fails open with 10% of a burst of 5 (at least 1 per tenant and route): few allowed, the rest refused locally.
            assertTrue(windows.get(0).getDetail().contains("orders|OPEN|allowed=") &&
                windows.get(0).getDetail().contains("orders|OPEN|denied="), windows.get(0).getDetail());
            assertTrue(windows.get(0).getPolicyId().startsWith("sdk:"), windows.get(0).toString());
        }
        finally
        {
            server.close();
        }
    }

    @Test
    void afterAnOutageTheAdmittedRateRampsUpInsteadOfReleasingPentUpDemand() throws Exception
    {
        StoreServer server = TestNode.start(dir, MonotonicClock.SYSTEM, 1);
        final int port = server.port();
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + port).deadline(Duration.ofMillis(50))
            .circuit(2, Duration.ofMillis(100)).recoveryRamp(Duration.ofSeconds(2)).build())
        {
            awaitPolicies(client);
            server.close();
            for (int i = 0; i < 3; i++)
            {
                client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
            }
            // The node comes back with a full bucket (orders: 10/s, burst 5): without a ramp the first
            // second would admit 5 + 10.
            server = TestNode.start(dir, MonotonicClock.SYSTEM, 1, port);
            assertTrue(client.awaitConnected(Duration.ofSeconds(10)));
            Thread.sleep(150); // past the circuit's probe time
            final long start = System.nanoTime();
            int admitted = 0;
            while (System.nanoTime() - start < 1_000_000_000L)
            {
                final Decision d = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
                admitted += d.allowed() ? 1 : 0;
                Thread.sleep(2);
            }
            assertTrue(admitted <= 12, "at most 1.2 x the policy's 10/s in the first second back: " + admitted);
            assertTrue(admitted >= 5, "but traffic flows: " + admitted);
            assertTrue(client.stats().rampRefusals() > 0, "the ramp held some back");
        }
        finally
        {
            server.close();
        }
    }
}
