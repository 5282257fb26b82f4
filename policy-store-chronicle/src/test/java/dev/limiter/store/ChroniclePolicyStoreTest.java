package dev.limiter.store;

import dev.limiter.client.LimiterClient;
import dev.limiter.client.PolicyStore;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(60)
class ChroniclePolicyStoreTest
{
    @TempDir
    Path dir;

    private static byte[] set(final long rate)
    {
        return PolicySet.newBuilder().setVersion(7).addPolicies(Policy.newBuilder().setId("orders").setRate(rate)).build().toByteArray();
    }

    @Test
    void aSavedSetIsThereAfterTheFileIsReopened() throws Exception
    {
        final Path file = dir.resolve("sdk/policies.cm3");
        try (ChroniclePolicyStore store = ChroniclePolicyStore.open(file))
        {
            assertTrue(store.load().isEmpty(), "a new store holds nothing");
            store.save(new PolicyStore.Stored(6, 1_000, set(5)));
            store.save(new PolicyStore.Stored(7, 2_000, set(10)));
        }
        assertEquals("true", System.getProperty("chronicle.analytics.disable"), "analytics off before Chronicle loaded");
        try (ChroniclePolicyStore reopened = ChroniclePolicyStore.open(file))
        {
            final PolicyStore.Stored stored = reopened.load().orElseThrow();
            assertEquals(7, stored.version());
            assertEquals(2_000, stored.confirmedAtMillis());
            assertArrayEquals(set(10), stored.policySet());
        }
    }

    @Test
    void anSdkStartingWhileTheClusterIsUnreachableHoldsTheStoredSetWithinItsTtl() throws Exception
    {
        final Path file = dir.resolve("policies.cm3");
        try (ChroniclePolicyStore store = ChroniclePolicyStore.open(file))
        {
            store.save(new PolicyStore.Stored(7, System.currentTimeMillis() - 1_000, set(10)));
        }
        // Port 1 on loopback: nothing listens there.
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:1").connectTimeout(Duration.ofMillis(200))
            .policyTtl(Duration.ofMinutes(1)).policyStore(ChroniclePolicyStore.open(file)).build())
        {
            assertEquals(7, client.policies().version());
            assertEquals(10, client.policies().current().orElseThrow().policies().getPolicies(0).getRate());
        }
        try (ChroniclePolicyStore store = ChroniclePolicyStore.open(file))
        {
            store.save(new PolicyStore.Stored(7, System.currentTimeMillis() - 120_000, set(10)));
        }
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:1").connectTimeout(Duration.ofMillis(200))
            .policyTtl(Duration.ofMinutes(1)).policyStore(ChroniclePolicyStore.open(file)).build())
        {
            assertEquals(7, client.policies().version(), "the version is known");
            assertFalse(client.policies().current().isPresent(), "but a set older than the TTL is not used");
        }
    }
}
