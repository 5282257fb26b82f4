package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.Lease;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.LeaseToken;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.KeyHashCollisions;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Concurrency limits through the SDK against a real node: leases taken, counted, given back, expired. */
@Timeout(60)
class LeaseTest
{
    /** exports: 2 at a time per tenant; jobs: 100/s per tenant under a pool of 3 running jobs for everybody. */
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"exports\",\"selector\":{\"route\":\"/v1/exports\"},\"maxConcurrent\":2,\"leaseTtl\":\"30s\",\"owner\":\"t\"}," +
        "{\"id\":\"jobs\",\"selector\":{\"route\":\"/v1/jobs\"},\"rate\":100,\"owner\":\"t\"}," +
        "{\"id\":\"job-pool\",\"selector\":{\"route\":\"/v1/jobs\"},\"maxConcurrent\":3,\"leaseTtl\":\"30s\",\"scope\":\"GLOBAL\"," +
        "\"stacked\":true,\"owner\":\"t\"}," +
        "{\"id\":\"reports\",\"selector\":{\"route\":\"/v1/reports\"},\"rate\":100,\"owner\":\"t\"}," +
        "{\"id\":\"reports-running\",\"selector\":{\"route\":\"/v1/reports\"},\"maxConcurrent\":1,\"mode\":\"SHADOW\",\"owner\":\"t\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"t\"}}";

    private static final String TOKEN = "lease-test-token-0123456789abcdef";

    @TempDir
    Path dir;

    private final ManualClock clock = new ManualClock(1_000 * SECOND);
    private StoreServer server;
    private LimiterClient client;

    @BeforeEach
    void start() throws Exception
    {
        final Path policies = dir.resolve("lease-policies.json"); // not TestNode's own file, which it writes
        Files.writeString(policies, POLICIES);
        // One shard: a stacked GLOBAL pool over several shards is split into a share per shard (docs/policies.md).
        server = new StoreServer(TestNode.config(dir, 0, 1).policiesFile(policies).adminToken(TOKEN), clock).start();
        client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop()
    {
        client.close();
        server.close();
    }

    @Test
    void aConcurrencyLimitCountsLeasesUntilTheyAreClosed()
    {
        final Descriptor export = Descriptor.of("acme", "/v1/exports");
        final Lease first = client.acquireLease(export);
        assertTrue(first.granted() && first.held(), first.toString());
        assertTrue(first.id().startsWith("L1."));
        assertEquals(1, first.decision().remaining());
        try (Lease second = client.acquireLease(export))
        {
            assertTrue(second.granted());
            final Lease third = client.acquireLease(export);
            assertFalse(third.granted(), "2 held");
            assertFalse(third.held());
            assertNull(third.id());
            assertEquals(ReasonCode.RATE_LIMITED, third.decision().reason());
            assertEquals("exports", third.decision().policyId());
            assertEquals(2, third.decision().limit());
            assertTrue(client.acquireLease(Descriptor.of("other-tenant", "/v1/exports")).granted(), "per tenant");
        }
        assertTrue(client.acquireLease(export).granted(), "the second went back when its block ended");
        first.close();
        first.close(); // once only: the second close gives back nothing more
        assertFalse(first.held());
        assertTrue(client.acquireLease(export).granted());
        assertFalse(client.acquireLease(export).granted(), "two held again: one release freed one lease, not two");
        assertEquals(0, client.stats().leaseReleaseFailures());
        assertEquals(2, metric(server.metrics().scrape(), "limiter_lease_releases_total{policy=\"exports\"}"),
            "the second (closed by its block) and the first (closed twice, released once)");
    }

    @Test
    void aLeaseTakenUnderAnOlderVersionNeverFreesALeaseOfTheNewOne() throws Exception
    {
        final Descriptor export = Descriptor.of("versioned", "/v1/exports");
        final Lease old = client.acquireLease(export);
        assertTrue(old.held(), old.toString());
        final java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        assertEquals(200, AdminCalls.call(http, server.adminPort(), "PUT", "/v1/policies/exports", "{\"selector\":{\"route\":" +
            "\"/v1/exports\"},\"maxConcurrent\":2,\"leaseTtl\":\"31s\",\"owner\":\"t\",\"reason\":\"a new version\"}", TOKEN).statusCode());
        Await.until("the SDK to hold policy version 2", Duration.ofSeconds(5), () -> client.policies().version() >= 2);
        final Lease first = client.acquireLease(export);
        final Lease second = client.acquireLease(export);
        assertTrue(first.held() && second.held() && first.decision().policyVersion() == 2, "version 2 starts afresh: " + first);
        old.close(); // its lease is in version 1's key: giving it back must not free one of version 2's
        assertFalse(client.acquireLease(export).granted(), "version 2 still holds its two leases");
        second.close();
        assertTrue(client.acquireLease(export).granted());
    }

    @Test
    void aLeaseNotGivenBackExpiresAfterItsTtl()
    {
        final Descriptor export = Descriptor.of("crashy", "/v1/exports");
        assertTrue(client.acquireLease(export).held());
        assertTrue(client.acquireLease(export).held());
        final Decision refused = client.acquireLease(export).decision();
        assertFalse(refused.allowed());
        final long retry = refused.retryAfterNanos();
        assertTrue(retry > 30 * SECOND && retry <= 40 * SECOND, "expires between the TTL and 4/3 of it: " + refused.retryAfter());
        clock.advance(retry - 1);
        assertFalse(client.acquireLease(export).granted(), "not a nanosecond early");
        clock.advance(1);
        assertTrue(client.acquireLease(export).granted(), "both expired: the process that held them is gone");
    }

    @Test
    void aStackedConcurrencyPoolIsSharedAndNamedWhenItRefuses() throws Exception
    {
        final Lease[] running = new Lease[3];
        for (int t = 0; t < 3; t++)
        {
            running[t] = client.acquireLease(Descriptor.of("tenant-" + t, "/v1/jobs"));
            assertTrue(running[t].granted() && running[t].held(), running[t].toString());
        }
        final Lease fourth = client.acquireLease(Descriptor.of("tenant-9", "/v1/jobs"));
        assertFalse(fourth.granted());
        assertEquals("job-pool", fourth.decision().policyId(), "the pool refused, not the tenant's rate");
        client.release(running[1].id()).get(5, TimeUnit.SECONDS);
        assertTrue(client.acquireLease(Descriptor.of("tenant-9", "/v1/jobs")).granted(), "a job slot given back by its id");
        final Decision rate = client.acquireBlocking(Descriptor.of("tenant-0", "/v1/orders"), 1);
        assertFalse(rate.holdsLease(), "a rate limit's grant holds no lease");
    }

    @Test
    void aShadowConcurrencyLimitBesideARateCountsWhatRunsBecauseItsLeasesGoBack()
    {
        final Descriptor report = Descriptor.of("acme", "/v1/reports");
        final Lease first = client.acquireLease(report);
        assertEquals("reports", first.decision().policyId(), "the rate decides");
        assertTrue(first.granted() && first.held(), "and the grant holds the shadow's lease: " + first);
        try (Lease second = client.acquireLease(report))
        {
            assertTrue(second.granted(), "a shadow never denies");
        }
        first.close();
        assertTrue(client.acquireLease(report).granted());
        final String scrape = server.metrics().scrape();
        assertEquals(2, metric(scrape, "limiter_shadow_decisions_total{outcome=\"would_allow\",policy=\"reports-running\"}"), scrape);
        assertEquals(1, metric(scrape, "limiter_shadow_decisions_total{outcome=\"would_deny\",policy=\"reports-running\"}"),
            "only the second ran beside the first; the third came after the first went back");
    }

    private static long metric(final String metrics, final String series)
    {
        return metrics.lines().filter(l -> l.startsWith(series + " ")).mapToLong(l -> (long)Double.parseDouble(l.substring(series.length() + 1)))
            .sum();
    }

    @Test
    void aClientHoldingItsOwnLeaseCannotFreeAnyoneElsesSoMaxConcurrentHolds()
    {
        // The victims hold both leases of their tenant; the attacker holds one lease of its own, knows its
        // own id, check and descriptor, and tries every way of naming the victims' leases.
        final Descriptor victims = Descriptor.of("victim", "/v1/exports");
        final Lease a = client.acquireLease(victims);
        final Lease b = client.acquireLease(victims);
        assertTrue(a.held() && b.held());
        final Descriptor mine = Descriptor.of("attacker", "/v1/exports");
        final Lease own = client.acquireLease(mine);
        assertTrue(own.held());
        final LeaseToken ownToken = LeaseToken.parse(own.id());
        final LeaseToken victimToken = LeaseToken.parse(a.id());
        final byte[] victimFields = victimToken.encodedFields();
        final java.util.List<LeaseToken> attempts = new java.util.ArrayList<>();
        final java.util.Random random = new java.util.Random(46);
        for (int i = 0; i < 200; i++)
        {
            attempts.add(new LeaseToken(random.nextLong(), ownToken.check(), 2, victimFields)); // guessed ids
        }
        for (long near = -100; near <= 100; near++)
        {
            attempts.add(new LeaseToken(ownToken.leaseId() + near, ownToken.check(), 1, victimFields)); // ids near the one it holds
        }
        attempts.add(new LeaseToken(ownToken.leaseId(), ownToken.check(), 65_535, victimFields)); // its own id on the victims' key
        attempts.add(new LeaseToken(victimToken.leaseId(), ownToken.check(), 65_535, ownToken.encodedFields())); // a victim's id on its key
        for (final LeaseToken attempt : attempts)
        {
            client.release(attempt.encode()).join();
        }
        final Decision blocked = client.acquireBlocking(victims, 1);
        assertFalse(blocked.allowed(), "both victims' leases still held: over-admission 0");
        assertEquals(0, blocked.remaining());
        // Its own lease, released twice with an inflated cost, frees exactly one lease, once.
        client.release(new LeaseToken(ownToken.leaseId(), ownToken.check(), 65_535, ownToken.encodedFields()).encode()).join();
        client.release(own.id()).join();
        assertTrue(client.acquireLease(mine).granted());
        assertTrue(client.acquireLease(mine).granted());
        assertFalse(client.acquireLease(mine).granted(), "its one lease came back once, as one lease");
        final String scrape = server.metrics().scrape();
        assertEquals(attempts.size() + 1, metric(scrape, "limiter_lease_releases_refused_total{policy=\"exports\",reason=\"unknown\"}"), scrape);
        assertEquals(1, metric(scrape, "limiter_lease_releases_total{policy=\"exports\"}"));
        a.close();
        assertTrue(client.acquireBlocking(victims, 1).allowed(), "a holder's own release still frees its lease");
    }

    /**
     * A lease's record once was keyed by the hash of its limit's key, and that hash can be solved for:
     * a caller took a lease on a tenant it made up whose key hashed as the victim's did, then released
     * its own genuine id naming the victim's descriptor, and the node freed one of the victim's leases
     * (23 held at once under maxConcurrent 2). The record now holds the limit's key whole.
     */
    @Test
    void aLeaseOnAMadeUpTenantWhoseKeyHashesAsTheVictimsNeverFreesTheVictimsLease()
    {
        final Descriptor victim = Descriptor.of("victim", "/v1/exports");
        final Lease a = client.acquireLease(victim);
        final Lease b = client.acquireLease(victim);
        assertTrue(a.held() && b.held());
        assertFalse(client.acquireLease(victim).granted(), "2 held: the limit is reached");
        final byte[] victimFields = LeaseToken.parse(a.id()).encodedFields();
        final long version = a.decision().policyVersion();
        final KeyHashCollisions collisions = new KeyHashCollisions(46);
        int overAdmitted = 0;
        // The policy's ordinal is not told: an attacker tries the few there can be, a few times each.
        for (int round = 0; round < 24; round++)
        {
            final int ordinal = round % 8;
            final long target = KeyHashCollisions.hashOf(KeyHashCollisions.tenantKey(ordinal, version, "victim"));
            final String madeUp = collisions.tenantFor(ordinal, version, target);
            assertEquals(target, KeyHashCollisions.hashOf(KeyHashCollisions.tenantKey(ordinal, version, madeUp)), "the hashes do collide");
            final Lease own = client.acquireLease(Descriptor.of(madeUp, "/v1/exports"));
            assertTrue(own.held(), own.toString());
            final LeaseToken token = LeaseToken.parse(own.id());
            client.release(new LeaseToken(token.leaseId(), token.check(), 1, victimFields).encode()).join();
            overAdmitted += client.acquireLease(victim).granted() ? 1 : 0;
        }
        assertEquals(0, overAdmitted, "leases held at once on 'victim' with maxConcurrent 2: " + (2 + overAdmitted));
    }

    @Test
    void leaseIdsAreRandomNotTheTimeOfTheGrant()
    {
        final java.util.Set<Long> ids = new java.util.HashSet<>();
        for (int i = 0; i < 50; i++)
        {
            final Lease lease = client.acquireLease(Descriptor.of("t" + i, "/v1/exports"));
            final long id = LeaseToken.parse(lease.id()).leaseId();
            assertTrue(ids.add(id));
            // The clock stands still: ids taken from it would all be one time.
            assertTrue(Math.abs(id - clock.nanoTime()) > 1_000_000_000_000L, Long.toHexString(id));
        }
    }

    @Test
    void badLeaseIdsAreRefusedBeforeAnythingIsSent()
    {
        final IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> client.release("12345"));
        assertTrue(bad.getMessage().contains("not a lease id"), bad.getMessage());
    }

    @Test
    void withNoNodeAnsweringTheSdkDecidesLocallyAndHoldsNoLease()
    {
        server.close();
        final Lease local = client.acquireLease(Descriptor.of("acme", "/v1/exports"));
        assertTrue(local.decision().degraded(), local.toString());
        assertFalse(local.held(), "nothing on the cluster to give back");
        local.close();
        assertEquals(0, client.stats().leaseReleaseFailures());
    }
}
