package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SDK token blocks (policy field tokenLease) against a real node: blocks charged to the node's bucket, most calls
 * decided in the SDK from them.
 */
@Timeout(60)
class TokenLeaseTest
{
    @TempDir
    Path dir;

    @Test
    void aBusyTenantIsDecidedFromLeasedBlocksAndTheBucketIsChargedForEveryToken() throws Exception
    {
        final Path policies = dir.resolve("lease-policies.json");
        Files.writeString(policies, "{\"version\":1,\"policies\":[" +
            "{\"id\":\"hot\",\"selector\":{\"route\":\"/hot\"},\"rate\":1,\"period\":\"3600s\",\"burst\":30000,\"owner\":\"t\"," +
            "\"tokenLease\":{\"maxSharePercent\":10}}," +
            "{\"id\":\"plain\",\"selector\":{\"route\":\"/plain\"},\"rate\":100000,\"owner\":\"t\"}" +
            "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"t\"}}");
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).policiesFile(policies), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final Descriptor hot = Descriptor.of("acme", "/hot");
            long allowed = 0;
            long local = 0;
            // 30,000 tokens that never refill (the node's clock stands still): all granted, none more.
            for (int i = 0; i < 40_000; i++)
            {
                final Decision d = client.acquireBlocking(hot, 1);
                assertFalse(d.degraded(), d.toString());
                allowed += d.allowed() ? 1 : 0;
                local += d.fromTokenLease() ? 1 : 0;
            }
            final long lapsed = client.stats().tokenLeaseTokensLapsed();
            assertTrue(local > 10_000, "most grants came from token blocks: " + local + " of " + allowed);
            assertTrue(allowed <= 30_000, "never more than the bucket holds: " + allowed);
            // What the node charged: the grants it answered one by one, and the blocks. Every token was
            // charged once: granted, or leased and not used (lapsed, or still held).
            assertEquals(30_000, allowed + client.stats().tokenLeaseTokensLeased() - client.stats().tokenLeaseTokensUsed(),
                "allowed " + allowed + ", leased " + client.stats().tokenLeaseTokensLeased() + ", used " + client.stats().tokenLeaseTokensUsed() +
                ", lapsed " + lapsed);
            final Decision plain = client.acquireBlocking(Descriptor.of("acme", "/plain"), 1);
            assertFalse(plain.fromTokenLease(), "a policy without tokenLease is always the node's");
        }
    }

    @Test
    void withAHotRateOnlyTheKeyTheNodeFindsHotIsLeased() throws Exception
    {
        final Path policies = dir.resolve("hot-lease-policies.json");
        Files.writeString(policies, "{\"version\":1,\"policies\":[" +
            "{\"id\":\"per-tenant\",\"selector\":{\"route\":\"/api\"},\"rate\":1000000,\"burst\":1000000,\"owner\":\"t\"," +
            "\"tokenLease\":{\"hotRate\":5000}}" +
            "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"t\"}}");
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).policiesFile(policies), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final Descriptor big = Descriptor.of("big", "/api");
            final Descriptor small = Descriptor.of("small", "/api");
            long bigLocal = 0;
            long bigLocalBeforeReport = 0;
            long smallLocal = 0;
            // On the node's clock: big asks 10,000 tokens a second (above the hot rate), small 500 (below).
            for (int i = 1; i <= 40_000; i++)
            {
                if (i % 10 == 0)
                {
                    clock.advance(SECOND / 1000);
                }
                final Decision d = client.acquireBlocking(big, 1);
                assertTrue(d.allowed() && !d.degraded(), d.toString());
                bigLocal += d.fromTokenLease() ? 1 : 0;
                if (i < 9_000)
                {
                    bigLocalBeforeReport = bigLocal; // the node reports its hot keys after a second of its time
                }
                if (i % 20 == 0)
                {
                    final Decision s = client.acquireBlocking(small, 1);
                    assertTrue(s.allowed() && !s.degraded(), s.toString());
                    smallLocal += s.fromTokenLease() ? 1 : 0;
                }
            }
            assertEquals(0, bigLocalBeforeReport, "no key is leased before a node finds it hot");
            assertTrue(bigLocal > 10_000, "the hot key is decided from token blocks once flagged: " + bigLocal);
            assertEquals(0, smallLocal, "a key below the hot rate is always the node's");
        }
    }
}
