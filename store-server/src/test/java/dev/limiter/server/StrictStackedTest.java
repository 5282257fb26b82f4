package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClusterPorts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A STRICT request refused by a stacked (hierarchical) scope charges nothing and logs nothing, so
 * it has no commit to wait for: it is answered at once, by the node, not left to its deadline.
 */
@Timeout(60)
class StrictStackedTest
{
    @TempDir
    Path dir;

    @Test
    void aStrictStackedRequestThatIsRefusedIsAnsweredAtOnce() throws Exception
    {
        final int port = ClusterPorts.free(1, 100)[0];
        final Path policies = dir.resolve("policies.json");
        // Each tenant 100/s (STRICT); all of them share a STRICT pool of 2 per minute.
        Files.writeString(policies, "{\"version\":1,\"policies\":[" +
            "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":100,\"consistency\":\"STRICT\",\"owner\":\"t\"}," +
            "{\"id\":\"pool\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":2,\"period\":\"60s\",\"burst\":2,\"scope\":\"GLOBAL\"," +
            "\"stacked\":true,\"consistency\":\"STRICT\",\"owner\":\"t\"}],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"t\"}}");
        final ServerConfig config = new ServerConfig().host("127.0.0.1").port(port).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(policies).nodeId("n1").peers(Map.of("n1", new InetSocketAddress("127.0.0.1", port))).raftPortOffset(100)
            .dataDir(dir.resolve("n1"));
        try (StoreServer server = new StoreServer(config).start())
        {
            Await.until("the one-member cluster to elect itself", Duration.ofSeconds(20),
                () -> server.replication().canDecide());
            try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + port).deadline(Duration.ofSeconds(5))
                .localFallback(false).build())
            {
                for (int i = 0; i < 2; i++)
                {
                    assertTrue(client.acquireBlocking(Descriptor.of("t" + i, "/v1/orders/1"), 1).allowed());
                }
                final long start = System.nanoTime();
                final Decision refused = client.acquireBlocking(Descriptor.of("t9", "/v1/orders/1"), 1);
                final long tookMillis = (System.nanoTime() - start) / 1_000_000;
                assertFalse(refused.allowed());
                assertFalse(refused.degraded(), "a node decided it");
                assertEquals(ReasonCode.RATE_LIMITED, refused.reason());
                assertEquals("pool", refused.policyId(), "the shared pool refused it");
                assertTrue(tookMillis < 1000, "answered after " + tookMillis + " ms (a 5 s deadline): it waited for a commit of nothing");
            }
        }
    }
}
