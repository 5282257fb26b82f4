package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.engine.MonotonicClock;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static dev.limiter.server.testing.AdminCalls.TOKEN;
import static dev.limiter.server.testing.AdminCalls.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What SDKs decide while the node is gone (emergency budgets, fail open or closed) and how they come back: the
 * degraded window audited, the admitted rate ramped up.
 */
@Timeout(60)
class SdkOutageTest
{
    @TempDir
    Path dir;

    /** Until the client holds a policy set (it asks when its connection opens). */
    private static void awaitPolicies(final LimiterClient client) throws InterruptedException
    {
        Await.until("the client to hold the policy set", Duration.ofSeconds(3), () -> client.policies().version() > 0);
        assertTrue(client.policies().version() > 0, "the client holds the policy set");
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
    void withTheClusterGoneFailOpenPoliciesSpendTheirEmergencyBudgetAndFailClosedOnesRefuseWithinTheDeadline() throws Exception
    {
        final java.util.List<String> pages = new java.util.concurrent.CopyOnWriteArrayList<>();
        final StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
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
        final StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
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
            Await.until("the SDK to report its degraded window", Duration.ofSeconds(5), () ->
            {
                client.acquireBlocking(Descriptor.of("acme", "/v1/orders/2"), 1); // the first answer closes the circuit
                return client.stats().degradedWindowsReported() > 0;
            });
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
                // the pace of a 1 s measurement of the admitted rate
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
