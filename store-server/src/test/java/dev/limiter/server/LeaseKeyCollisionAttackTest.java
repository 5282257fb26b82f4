package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.Lease;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.LeaseToken;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static dev.limiter.server.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A lease's record once was keyed by the hash of its limit's key, and that hash can be solved for:
 * a caller took a lease on a tenant it made up whose key hashed as the victim's did, then released
 * its own genuine id naming the victim's descriptor, and the node freed one of the victim's leases
 * (23 held at once under maxConcurrent 2). The record now holds the limit's key whole.
 */
@Timeout(120)
class LeaseKeyCollisionAttackTest
{
    /** exports: 2 at a time per tenant. */
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"exports\",\"selector\":{\"route\":\"/v1/exports\"},\"maxConcurrent\":2,\"leaseTtl\":\"30s\",\"owner\":\"t\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"t\"}}";

    @TempDir
    Path dir;

    private final ManualClock clock = new ManualClock(1_000 * SECOND);
    private StoreServer server;
    private LimiterClient client;

    @BeforeEach
    void start() throws Exception
    {
        final Path policies = dir.resolve("attack-policies.json");
        Files.writeString(policies, POLICIES);
        server = new StoreServer(TestNode.config(dir, 0, 1).policiesFile(policies), clock).start();
        client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop()
    {
        client.close();
        server.close();
    }

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
}
