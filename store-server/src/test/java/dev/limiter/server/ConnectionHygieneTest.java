package dev.limiter.server;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.MessageType;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every listening port bounds what a client can hold: connections beyond the cap are turned away
 * with a reason, silent connections are closed, a message begun and never finished closes its
 * connection, and a client that does not read its answers is not read from. Each refusal is counted.
 */
@Timeout(60)
class ConnectionHygieneTest
{
    @TempDir
    Path dir;

    private StoreServer start(final int maxConnections, final int adminMaxConnections) throws InterruptedException
    {
        return new StoreServer(TestNode.config(dir, 0, 1).maxConnections(maxConnections).adminMaxConnections(adminMaxConnections)
            .idleTimeoutMillis(600).adminIdleTimeoutMillis(600).frameTimeoutMillis(400), new ManualClock(SECOND)).start();
    }

    private static boolean counted(final StoreServer server, final String port, final String reason)
    {
        return server.metrics().scrape().lines()
            .anyMatch(l -> l.startsWith("limiter_refusals_total{port=\"" + port + "\",reason=\"" + reason + "\"}") && !l.endsWith(" 0.0"));
    }

    @Test
    void dataConnectionsBeyondTheCapAreRefusedWithAReason() throws Exception
    {
        try (StoreServer server = start(3, 64))
        {
            final List<RawConnection> open = new ArrayList<>();
            try
            {
                for (int i = 0; i < 3; i++)
                {
                    final RawConnection raw = new RawConnection(server.port());
                    open.add(raw);
                    assertEquals(MessageType.PONG, raw.request(MessageType.PING, i, new byte[0]).type());
                }
                try (RawConnection fourth = new RawConnection(server.port()))
                {
                    final RawConnection.Answer refusal = fourth.read();
                    assertNotNull(refusal, "the refused connection is told why before it is closed");
                    assertEquals(ErrorCode.OVERLOADED, refusal.errorCode());
                    assertTrue(refusal.errorMessage().contains("at most 3 connections"), refusal.errorMessage());
                    assertTrue(fourth.closedByPeer());
                }
                assertTrue(counted(server, "data", "max-connections"));
                open.remove(0).close();
                Await.until("the node to count the closed connection out", Duration.ofSeconds(5),
                    () -> server.metrics().scrape().contains("limiter_connections_open 2.0"));
                try (RawConnection again = new RawConnection(server.port()))
                {
                    assertEquals(MessageType.PONG, again.request(MessageType.PING, 9, new byte[0]).type(), "a freed slot is taken again");
                }
            }
            finally
            {
                for (final RawConnection raw : open)
                {
                    raw.close();
                }
            }
        }
    }

    @Test
    void aFrameBegunAndNeverFinishedClosesTheConnectionEvenWhenTrickled() throws Exception
    {
        try (StoreServer server = start(100, 64); RawConnection raw = new RawConnection(server.port()))
        {
            final byte[] ping = RawConnection.frame(MessageType.PING, 1, new byte[0]);
            final long start = System.nanoTime();
            // One byte every 100 ms keeps the connection from being idle but never finishes the frame.
            RawConnection.Answer answer = null;
            for (int i = 0; i < ping.length - 1 && answer == null; i++)
            {
                raw.send(new byte[] {ping[i]});
                raw.timeout(100);
                try
                {
                    answer = raw.read();
                }
                catch (final java.net.SocketTimeoutException stillWaiting)
                {
                    // no answer yet
                }
            }
            raw.timeout(5000);
            answer = answer != null ? answer : raw.read();
            final long tookMillis = (System.nanoTime() - start) / 1_000_000;
            assertNotNull(answer, "the node says why it closes");
            assertEquals(ErrorCode.MALFORMED_FRAME, answer.errorCode());
            assertTrue(answer.errorMessage().contains("not finished within 400 ms"), answer.errorMessage());
            assertTrue(raw.closedByPeer());
            assertTrue(tookMillis >= 400 && tookMillis < 3000, tookMillis + " ms");
            assertTrue(counted(server, "data", "unfinished-message"));
        }
    }

    @Test
    void aSilentConnectionIsClosedAndOneThatPingsIsNot() throws Exception
    {
        try (StoreServer server = start(100, 64); RawConnection silent = new RawConnection(server.port());
             RawConnection pinging = new RawConnection(server.port()))
        {
            final long end = System.nanoTime() + 2 * SECOND;
            int pings = 0;
            while (System.nanoTime() < end)
            {
                assertEquals(MessageType.PONG, pinging.request(MessageType.PING, pings++, new byte[0]).type());
                // a ping every 150 ms keeps this connection busy while the other stays silent
                Thread.sleep(150);
            }
            assertTrue(silent.closedByPeer(), "closed after 600 ms of silence");
            assertEquals(MessageType.PONG, pinging.request(MessageType.PING, pings, new byte[0]).type(), "a connection in use stays open");
            assertTrue(counted(server, "data", "idle"));
        }
    }

    @Test
    void anSdkThatSaysNothingKeepsItsConnectionWithKeepAlivePings() throws Exception
    {
        try (StoreServer server = start(100, 64);
             dev.limiter.client.LimiterClient client = dev.limiter.client.LimiterClient.builder().endpoints("127.0.0.1:" + server.port())
                 .connections(1).followPolicies(false).keepAlive(Duration.ofMillis(150)).build())
        {
            assertTrue(client.acquireBlocking(dev.limiter.client.Descriptor.of("acme", "/v1/orders/1"), 1).allowed());
            Thread.sleep(2000); // over three of the node's 600 ms idle timeouts, with no call
            assertFalse(counted(server, "data", "idle"), "the node closed the SDK's connection as idle");
            assertTrue(server.metrics().scrape().contains("limiter_connections_opened_total 1.0"), "one connection, never reopened");
            final dev.limiter.client.Decision after = client.acquireBlocking(dev.limiter.client.Descriptor.of("acme", "/v1/orders/1"), 1);
            assertFalse(after.degraded(), "the first call after the quiet time was a node's decision");
        }
    }

    @Test
    void aClientThatDoesNotReadItsAnswersIsNotReadFrom() throws Exception
    {
        try (StoreServer server = start(100, 64))
        {
            for (final int port : new int[] {server.port(), server.adminPort()})
            {
                final byte[] request = port == server.port() ? repeat(RawConnection.frame(MessageType.PING, 1, new byte[0]), 4096) :
                    repeat("GET /no-such-page HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII), 256);
                try (Socket socket = new Socket("127.0.0.1", port))
                {
                    socket.setReceiveBufferSize(4096);
                    final OutputStream out = socket.getOutputStream();
                    final AtomicLong written = new AtomicLong();
                    final Thread writer = new Thread(() ->
                    {
                        try
                        {
                            while (!Thread.currentThread().isInterrupted())
                            {
                                out.write(request);
                                written.addAndGet(request.length);
                            }
                        }
                        catch (final IOException closed)
                        {
                            // the test closed the socket
                        }
                    });
                    writer.setDaemon(true);
                    writer.start();
                    // Reading stops once the answers back up: the writer gets stuck on a full TCP window. How soon
                    // depends on the machine, so wait (bounded) for the count to stand still for 750 ms.
                    final long giveUpAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                    long after = -1;
                    long stillSince = System.nanoTime();
                    while (System.nanoTime() - stillSince < TimeUnit.MILLISECONDS.toNanos(750))
                    {
                        assertTrue(System.nanoTime() - giveUpAt < 0, "port " + port + ": the node kept reading (" + written.get() + " bytes)");
                        final long now = written.get();
                        if (now != after)
                        {
                            after = now;
                            stillSince = System.nanoTime();
                        }
                        // sampling how far the writer gets: a watch over time, not a wait for a condition
                        Thread.sleep(50);
                    }
                    assertTrue(writer.isAlive(), "port " + port + ": the writer is blocked on a full window, not cut off");
                    assertTrue(after < 256L << 20, "port " + port + ": " + after + " bytes taken before it stopped");
                    socket.close();
                    writer.join(5000);
                }
            }
        }
    }

    @Test
    void adminConnectionsAreCappedAndAnUnfinishedRequestGets408() throws Exception
    {
        try (StoreServer server = start(100, 2))
        {
            try (Socket a = new Socket("127.0.0.1", server.adminPort()); Socket b = new Socket("127.0.0.1", server.adminPort()))
            {
                // no count of open admin connections to await: time for the node to accept both
                Thread.sleep(100);
                try (Socket c = new Socket("127.0.0.1", server.adminPort()))
                {
                    c.setSoTimeout(5000);
                    final String answer = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    assertTrue(answer.startsWith("HTTP/1.1 503"), answer);
                    assertTrue(answer.contains("at most 2 connections"), answer);
                }
                // Half a request line, then nothing: answered 408 and closed.
                a.setSoTimeout(5000);
                a.getOutputStream().write("GET /metr".getBytes(StandardCharsets.US_ASCII));
                final String timedOut = new String(a.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(timedOut.startsWith("HTTP/1.1 408"), timedOut);
                // And a connection that says nothing is closed.
                b.setSoTimeout(5000);
                final InputStream silent = b.getInputStream();
                assertEquals(-1, silent.read());
            }
            assertTrue(counted(server, "admin", "max-connections"));
            assertTrue(counted(server, "admin", "unfinished-message"));
            assertTrue(counted(server, "admin", "idle"));
            assertFalse(counted(server, "data", "idle"), "each port counts its own");
        }
    }

    private static byte[] repeat(final byte[] one, final int times)
    {
        final byte[] all = new byte[one.length * times];
        for (int i = 0; i < times; i++)
        {
            System.arraycopy(one, 0, all, i * one.length, one.length);
        }
        return all;
    }
}
