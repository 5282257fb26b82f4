package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.server.engine.MonotonicClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A shard that fails mid-frame never sends unfilled records: the frame gets ERROR INTERNAL. */
@Timeout(60)
class ShardFailureTest
{
    @TempDir
    Path dir;

    @Test
    void aFailingShardAnswersItsFrameWithAnErrorAndTheNodeKeepsServing() throws Exception
    {
        final AtomicBoolean broken = new AtomicBoolean();
        final MonotonicClock clock = () ->
        {
            if (broken.get())
            {
                throw new IllegalStateException("injected clock failure");
            }
            return 5 * SECOND;
        };
        for (final boolean dedicated : new boolean[] { false, true })
        {
            final ServerConfig config = TestNode.config(dir, 0, 2).shardThreads(dedicated);
            try (StoreServer server = new StoreServer(config, clock).start();
                 LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port())
                     .deadline(Duration.ofSeconds(5)).build())
            {
                broken.set(true);
                final LimiterRequestException e = assertThrows(LimiterRequestException.class,
                    () -> client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1));
                assertEquals(ErrorCode.INTERNAL, e.code(), e.getMessage());
                broken.set(false);
                final dev.limiter.client.Decision next = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1);
                assertTrue(next.allowed() && !next.degraded(),
                    "same connection, next frame decided normally by the node (dedicated shard threads: " + dedicated + ")");
            }
        }
    }
}
