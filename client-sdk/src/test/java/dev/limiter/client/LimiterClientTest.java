package dev.limiter.client;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** SDK behaviour that needs no store: deadlines, unreachable nodes, bad settings. */
@Timeout(30)
class LimiterClientTest
{
    @Test
    void shouldFailACallWithATimeoutAtItsDeadlineWhenTheNodeNeverAnswers() throws Exception
    {
        try (SilentNode silent = new SilentNode())
        {
            try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + silent.port())
                .deadline(Duration.ofMillis(50)).build())
            {
                assertTrue(client.awaitConnected(Duration.ofSeconds(5)));
                final long start = System.nanoTime();
                final CompletableFuture<Decision> call = client.acquire(Descriptor.of("t", "/x"), 1);
                final ExecutionException e = assertThrows(ExecutionException.class, call::get);
                final long tookMillis = (System.nanoTime() - start) / 1_000_000;
                assertTrue(e.getCause() instanceof LimiterTimeoutException, String.valueOf(e.getCause()));
                assertTrue(e.getCause().getMessage().contains("within the call's deadline"));
                assertTrue(tookMillis >= 49 && tookMillis < 1000, "failed after " + tookMillis + " ms for a 50 ms deadline");
                assertThrows(LimiterTimeoutException.class, () -> client.acquireBlocking(Descriptor.of("t", "/x"), 1));
            }
        }
    }

    @Test
    void aBlockingCallReturnsByItsDeadlineEvenWhileACallbackStallsTheSdksThreads() throws Exception
    {
        try (SilentNode silent = new SilentNode())
        {
            try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + silent.port())
                .ioThreads(1).connections(1).deadline(Duration.ofMillis(50)).build())
            {
                assertTrue(client.awaitConnected(Duration.ofSeconds(5)));
                // A callback that blocks the SDK thread it runs on for 600 ms once its call times out.
                final java.util.concurrent.CountDownLatch stalled = new java.util.concurrent.CountDownLatch(1);
                client.acquire(Descriptor.of("t", "/x"), 1).whenComplete((d, f) ->
                {
                    stalled.countDown();
                    java.util.concurrent.locks.LockSupport.parkNanos(600_000_000L);
                });
                assertTrue(stalled.await(5, java.util.concurrent.TimeUnit.SECONDS));
                final long start = System.nanoTime();
                final LimiterTimeoutException e = assertThrows(LimiterTimeoutException.class,
                    () -> client.acquireBlocking(Descriptor.of("t", "/x"), 1));
                final long tookMillis = (System.nanoTime() - start) / 1_000_000;
                // The deadline timer ends it (1 ms ticks); the slack covers this shared machine's scheduling.
                assertTrue(tookMillis < 50 + 15, "returned after " + tookMillis + " ms for a 50 ms deadline, an SDK thread stalled for 600");
                assertTrue(e.getMessage().contains("within the call's deadline"), e.getMessage());
                assertEquals(0, client.lateDeadlines(), "the timer ended it, not the caller's own fallback");
            }
        }
    }

    @Test
    void shouldFailFastWhenNoNodeIsReachable() throws Exception
    {
        final int unusedPort;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            unusedPort = probe.getLocalPort();
        }
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + unusedPort)
            .connectTimeout(Duration.ofMillis(200)).build())
        {
            final long start = System.nanoTime();
            final LimiterUnavailableException e = assertThrows(LimiterUnavailableException.class,
                () -> client.acquireBlocking(Descriptor.of("t", "/x"), 1));
            assertTrue((System.nanoTime() - start) < 100_000_000L, "no waiting for a dead node");
            assertTrue(e.getMessage().contains("127.0.0.1:" + unusedPort), e.getMessage());
        }
    }

    @Test
    void shouldRejectBadSettingsWithClearMessages()
    {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().build())
            .getMessage().contains("no endpoints"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().endpoints("localhost"))
            .getMessage().contains("not host:port"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().endpoints("h:99999"))
            .getMessage().contains("outside 1-65535"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().endpoints("h:x"))
            .getMessage().contains("not a number"));
        assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().deadline(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().connections(0));
        assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().maxBatch(5000));
    }

    /** A loopback listener that accepts connections and never reads or answers. */
    private static final class SilentNode implements AutoCloseable
    {
        private final ServerSocket listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final List<Socket> accepted = new java.util.concurrent.CopyOnWriteArrayList<>();
        private final Thread acceptor = new Thread(() ->
        {
            try
            {
                while (true)
                {
                    accepted.add(listener.accept());
                }
            }
            catch (final Exception ignored)
            {
                // closed
            }
        }, "silent-node");

        SilentNode() throws java.io.IOException
        {
            acceptor.start();
        }

        int port()
        {
            return listener.getLocalPort();
        }

        @Override
        public void close() throws Exception
        {
            listener.close();
            acceptor.join(5000);
            for (final Socket s : accepted)
            {
                s.close();
            }
        }
    }
}
