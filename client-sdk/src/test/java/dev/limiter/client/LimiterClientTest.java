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

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** SDK behaviour that needs no store: deadlines, unreachable nodes, bad settings. */
@Timeout(30)
class LimiterClientTest
{
    @Test
    void shouldFailACallWithATimeoutAtItsDeadlineWhenTheNodeNeverAnswers() throws Exception
    {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress()))
        {
            final List<Socket> accepted = new ArrayList<>();
            final Thread acceptor = new Thread(() ->
            {
                try
                {
                    while (true)
                    {
                        accepted.add(silent.accept()); // reads nothing, answers nothing
                    }
                }
                catch (final Exception ignored)
                {
                    // closed
                }
            });
            acceptor.start();
            try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + silent.getLocalPort())
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
            silent.close();
            acceptor.join(5000);
            for (final Socket s : accepted)
            {
                s.close();
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
}
