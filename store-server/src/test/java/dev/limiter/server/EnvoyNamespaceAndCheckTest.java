package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.server.testing.ManualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Envoy's namespace belongs to Envoy's gateway: no field an SDK caller sets reaches an envoy
 * policy or NO_LIMIT. And a check (cost 0) tells what a one-token request would get, charging nothing.
 */
@Timeout(60)
class EnvoyNamespaceAndCheckTest
{
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"edge-ip\",\"selector\":{\"envoy\":{\"domain\":\"edge\",\"entries\":[{\"key\":\"remote_address\"}]}}," +
        "\"rate\":1,\"period\":\"3600s\",\"burst\":3,\"owner\":\"t\"}," +
        "{\"id\":\"admins\",\"unlimited\":true,\"selector\":{\"envoy\":{\"domain\":\"edge\",\"entries\":[{\"key\":\"user\",\"value\":\"admin\"}]}},\"owner\":\"t\"}," +
        "{\"id\":\"orders\",\"selector\":{\"route\":\"/orders\"},\"rate\":1,\"period\":\"3600s\",\"burst\":4,\"owner\":\"t\"}," +
        "{\"id\":\"route-budget\",\"stacked\":true,\"selector\":{\"route\":\"/orders\"},\"rate\":1,\"period\":\"3600s\",\"burst\":6,\"scope\":\"GLOBAL\",\"owner\":\"t\"}," +
        "{\"id\":\"orders-shadow\",\"mode\":\"SHADOW\",\"selector\":{\"route\":\"/orders\"},\"rate\":1,\"period\":\"3600s\",\"burst\":1,\"owner\":\"t\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1,\"period\":\"3600s\",\"burst\":21,\"owner\":\"t\"}}";

    @TempDir
    Path dir;
    private StoreServer node;
    private LimiterClient client;

    @BeforeEach
    void start() throws Exception
    {
        final Path policies = dir.resolve("policies.json");
        Files.writeString(policies, POLICIES);
        node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).ioThreads(1).policiesFile(policies)
            .dataDir(dir.resolve("node")), new ManualClock(5 * SECOND)).start();
        client = LimiterClient.builder().endpoints("127.0.0.1:" + node.port()).deadline(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop()
    {
        client.close();
        node.close();
    }

    private static byte[] utf8(final String s)
    {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aCallerChoosingTheMethodEnvoyGetsTheDefaultPolicyNeverNoLimit()
    {
        for (final String method : new String[] {"GET", "ENVOY", "eNvOy"})
        {
            final Descriptor d = Descriptor.builder().tenant("t-" + method).route("/anything").method(method).build();
            int allowed = 0;
            for (int i = 0; i < 100; i++)
            {
                final Decision decision = client.acquireBlocking(d, 1);
                assertNotEquals(ReasonCode.NO_LIMIT, decision.reason(), method);
                assertEquals("baseline", decision.policyId(), method);
                allowed += decision.allowed() ? 1 : 0;
            }
            assertEquals(21, allowed, method + ": the default's burst, as for any method");
        }
    }

    @Test
    void aCallerCannotChargeAnEnvoyPolicysBucketsWithCraftedFields()
    {
        final Descriptor envoy = Descriptor.envoy(utf8("edge"), List.of(utf8("remote_address")), List.of(utf8("10.0.0.1")));
        // The same tenant and route an Envoy descriptor has, with the method that once selected Envoy's namespace.
        final Descriptor crafted = Descriptor.builder().tenant(envoy.tenant()).route(envoy.route()).method("ENVOY").build();
        for (int i = 0; i < 10; i++)
        {
            assertEquals("baseline", client.acquireBlocking(crafted, 1).policyId());
        }
        final Decision first = client.acquireBlocking(envoy, 1);
        assertEquals("edge-ip", first.policyId());
        assertEquals(2, first.remaining(), "the crafted calls spent none of the address's Envoy bucket");
    }

    @Test
    void anEnvoyDescriptorNoPolicySelectsOrAnUnlimitedPolicyHasNoLimit()
    {
        final Descriptor unknown = Descriptor.envoy(utf8("edge"), List.of(utf8("user_agent")), List.of(utf8("curl")));
        final Descriptor admin = Descriptor.envoy(utf8("edge"), List.of(utf8("user")), List.of(utf8("admin")));
        for (int i = 0; i < 30; i++)
        {
            assertEquals(ReasonCode.NO_LIMIT, client.acquireBlocking(unknown, 1).reason());
            final Decision decision = client.acquireBlocking(admin, 1000);
            assertEquals(ReasonCode.NO_LIMIT, decision.reason());
            assertEquals("admins", decision.policyId());
        }
    }

    @Test
    void aCheckTellsWhatOneTokenWouldGetAndChargesNothing()
    {
        final Descriptor d = Descriptor.builder().tenant("acme").route("/anything").build();
        for (int i = 0; i < 5; i++)
        {
            final Decision check = client.check(d).join();
            assertTrue(check.allowed());
            assertEquals(21, check.remaining(), "what is there: nothing taken");
        }
        final Decision all = client.acquireBlocking(d, 21);
        assertTrue(all.allowed(), "the whole burst is still there");
        assertEquals(0, all.remaining());
        final Decision empty = client.check(d).join();
        assertFalse(empty.allowed());
        assertEquals(ReasonCode.RATE_LIMITED, empty.reason());
        assertEquals(0, empty.remaining());
        assertTrue(empty.retryAfterNanos() > 0 && empty.retryAfterNanos() <= 3600 * SECOND, String.valueOf(empty.retryAfterNanos()));
        assertThrows(IllegalArgumentException.class, () -> client.acquire(d, 0), "a cost of 0 is refused: checks are asked for by name");
        assertThrows(IllegalArgumentException.class, () -> client.acquireBlocking(d, 0));
    }

    @Test
    void aCheckOfStackedLimitsNamesTheTightestAndAShadowIsCheckedWithoutASpend()
    {
        final Descriptor a = Descriptor.builder().tenant("a").route("/orders").build();
        final Decision fresh = client.check(a).join();
        assertTrue(fresh.allowed());
        assertEquals("orders", fresh.policyId());
        assertEquals(4, fresh.remaining());
        for (int i = 0; i < 4; i++)
        {
            assertTrue(client.acquireBlocking(a, 1).allowed());
        }
        assertEquals("orders", client.check(a).join().policyId());
        assertFalse(client.check(a).join().allowed());
        // Another tenant has its own 4, but the route's budget of 6 has 2 left: the check names it.
        final Descriptor b = Descriptor.builder().tenant("b").route("/orders").build();
        final Decision shared = client.check(b).join();
        assertTrue(shared.allowed());
        assertEquals("route-budget", shared.policyId());
        assertEquals(2, shared.remaining());
        final String scrape = node.metrics().scrape();
        assertTrue(scrape.contains("limiter_shadow_decisions_total{outcome=\"would_deny\",policy=\"orders-shadow\"}"), scrape);
    }
}
