package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.TestNode;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.uring.IoUring;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --io-uring}: the data and admin ports run on io_uring where the kernel allows it, and
 * otherwise on epoll (or NIO), saying so; decisions are the same either way.
 */
@Timeout(30)
class IoUringTransportTest
{
    @TempDir
    Path dir;

    @Test
    void aNodeAskedForIoUringDecidesAndServesItsAdminPortOnItOrOnTheFallback() throws Exception
    {
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).preferIoUring(true)).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            assertEquals(IoUring.isAvailable() ? "io_uring" : Epoll.isAvailable() ? "epoll" : "nio", server.transport(),
                "io_uring here: " + IoUring.isAvailable() + (IoUring.isAvailable() ? "" : " (" + IoUring.unavailabilityCause() + ")"));
            for (int i = 0; i < 5; i++)
            {
                final Decision allowed = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
                assertTrue(allowed.allowed(), "token " + i + ": " + allowed);
                assertFalse(allowed.degraded(), "decided by the node");
            }
            final Decision refused = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
            assertFalse(refused.allowed(), "the orders burst is 5: " + refused);
            assertFalse(refused.degraded());
            final String metrics = AdminCalls.call(HttpClient.newHttpClient(), server.adminPort(), "GET", "/metrics", null, null).body();
            assertTrue(metrics.contains("limiter_decisions_total"), "the admin port answers on the same transport");
        }
    }

    @Test
    void withoutTheFlagANodeKeepsEpoll() throws Exception
    {
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1)).start())
        {
            assertEquals(Epoll.isAvailable() ? "epoll" : "nio", server.transport());
        }
    }
}
