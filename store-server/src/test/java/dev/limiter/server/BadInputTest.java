package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.RecordingLeakDetector;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bad input on a real socket: every case gets an ERROR frame or a closed connection, the node
 * keeps serving everybody else, and no buffer leaks (paranoid leak detection, recorded).
 */
@Timeout(120)
class BadInputTest
{
    @TempDir
    static Path dir;

    private static StoreServer server;
    private static LimiterClient bystander;
    private static int bystanderCalls;

    @BeforeAll
    static void start() throws Exception
    {
        server = TestNode.start(dir, new ManualClock(SECOND), 2);
        bystander = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void everybodyElseIsStillServed()
    {
        // A different tenant each time so the answer is always "allowed" from a fresh bucket.
        final dev.limiter.client.Decision served = bystander.acquireBlocking(Descriptor.of("bystander-" + bystanderCalls++, "/v1/orders/1"), 1);
        assertTrue(served.allowed() && !served.degraded(), "the node itself served the bystander: " + served);
    }

    @AfterAll
    static void stopAndCheckForLeaks() throws Exception
    {
        bystander.close();
        server.close();
        assertTrue(RecordingLeakDetector.installed(), "the recording leak detector must be active for this check to mean anything");
        final List<String> leaks = RecordingLeakDetector.collectLeaks();
        assertTrue(leaks.isEmpty(), "Netty buffers leaked:\n" + String.join("\n", leaks));
    }

    private static RawConnection connect() throws IOException
    {
        return new RawConnection(server.port());
    }

    /** Reads an ERROR frame and returns "CODE: message". */
    private static String readError(final RawConnection raw) throws IOException
    {
        final RawConnection.Answer answer = raw.read();
        assertTrue(answer != null, "expected an ERROR frame, the connection was closed");
        assertEquals(MessageType.ERROR, answer.type());
        return answer.errorCode() + ": " + answer.errorMessage();
    }

    private static void assertStillServes(final RawConnection raw) throws IOException
    {
        raw.send(RawConnection.frame(MessageType.PING, 4242, new byte[0]));
        final RawConnection.Answer pong = raw.read();
        assertTrue(pong != null, "the connection should still be open");
        assertEquals(MessageType.PONG, pong.type());
        assertEquals(4242L, pong.correlationId());
    }

    @Test
    void truncatedFrameWaitsForTheRestAndClosingFreesIt() throws Exception
    {
        try (RawConnection raw = connect())
        {
            final byte[] whole = RawConnection.frame(MessageType.ACQUIRE, 1, RawConnection.acquireBody(AcquireCodec.encodeFields("t", "", "", "/r", "", "")));
            raw.send(java.util.Arrays.copyOf(whole, whole.length - 5));
            // time in which half a frame must not be answered
            Thread.sleep(100);
            // Nothing is answered for half a frame; the rest completes it.
            raw.send(java.util.Arrays.copyOfRange(whole, whole.length - 5, whole.length));
            final RawConnection.Answer result = raw.read();
            assertEquals(MessageType.RESULT, result.type());
            assertEquals(1L, result.correlationId());
            raw.send(java.util.Arrays.copyOf(whole, 20)); // left hanging when we close
        }
    }

    @Test
    void anHttpRequestOnTheDataPortIsAnsweredInHttpNamingTheAdminPortAndTheConnectionCloses() throws Exception
    {
        for (final String method : List.of("GET", "POST"))
        {
            final java.net.http.HttpResponse<String> answer = java.net.http.HttpClient.newBuilder()
                .version(java.net.http.HttpClient.Version.HTTP_1_1).build()
                .send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + server.port() + "/metrics"))
                    .method(method, java.net.http.HttpRequest.BodyPublishers.ofString("{}")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(400, answer.statusCode(), answer.body());
            assertTrue(answer.body().startsWith("this is a limiter data port, which speaks its binary protocol (docs/protocol.md), " +
                "not HTTP: /metrics, /health, /status and the /v1 admin API are on the node's admin port"), answer.body());
        }
    }

    @Test
    void aTlsHandshakeOnAPlainDataPortIsClosedAndNothingElseIsAffected() throws Exception
    {
        final javax.net.ssl.SSLContext tls = javax.net.ssl.SSLContext.getInstance("TLS");
        tls.init(null, null, null);
        try (javax.net.ssl.SSLSocket socket = (javax.net.ssl.SSLSocket)tls.getSocketFactory().createSocket("127.0.0.1", server.port()))
        {
            socket.setSoTimeout(5000);
            // Closed without an answer: the client reports a failed handshake, not a timeout.
            final IOException failed = org.junit.jupiter.api.Assertions.assertThrows(IOException.class, socket::startHandshake);
            assertTrue(!(failed instanceof java.net.SocketTimeoutException), failed.toString());
        }
    }

    @Test
    void aFrameWhoseLengthIsTooLargeIsStillTooLargeWhateverItsBytesSpell() throws Exception
    {
        // "GET " read as a length, on a connection that already sent a frame: only a first frame is taken for HTTP.
        try (RawConnection raw = connect())
        {
            assertStillServes(raw);
            raw.send("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            assertTrue(readError(raw).startsWith("FRAME_TOO_LARGE"));
            assertTrue(raw.closedByPeer());
        }
    }

    @Test
    void oversizedFrameGetsFrameTooLargeAndTheConnectionCloses() throws Exception
    {
        try (RawConnection raw = connect())
        {
            raw.send(ByteBuffer.allocate(8).putInt(2 << 20).putInt(0).array());
            assertTrue(readError(raw).startsWith("FRAME_TOO_LARGE"));
            assertTrue(raw.closedByPeer());
        }
    }

    @Test
    void negativeLengthGetsMalformedFrameAndTheConnectionCloses() throws Exception
    {
        try (RawConnection raw = connect())
        {
            raw.send(ByteBuffer.allocate(16).putInt(-7).putLong(0).putInt(0).array());
            final String error = readError(raw);
            assertTrue(error.startsWith("MALFORMED_FRAME") && error.contains("negative"), error);
            assertTrue(raw.closedByPeer());
        }
    }

    @Test
    void lengthTooSmallForAHeaderGetsMalformedFrameAndTheConnectionCloses() throws Exception
    {
        try (RawConnection raw = connect())
        {
            raw.send(ByteBuffer.allocate(8).putInt(4).putInt(0x01050000).array());
            assertTrue(readError(raw).startsWith("MALFORMED_FRAME"));
            assertTrue(raw.closedByPeer());
        }
    }

    @Test
    void unknownTypeGetsAnErrorAndTheConnectionStaysUsable() throws Exception
    {
        try (RawConnection raw = connect())
        {
            raw.send(RawConnection.frame(99, 17, new byte[3]));
            final String error = readError(raw);
            assertTrue(error.startsWith("UNKNOWN_TYPE"), error);
            assertStillServes(raw);
        }
    }

    @Test
    void aHelloIsAnsweredWithTheNodesFeaturesAndAShortOneGetsAnErrorSayingWhatTheBodyIs() throws Exception
    {
        try (RawConnection raw = connect())
        {
            raw.send(RawConnection.frame(MessageType.HELLO, 21, new byte[3]));
            final String error = readError(raw);
            assertTrue(error.startsWith("MALFORMED_FRAME") && error.contains("HELLO body is 3 bytes"), error);
            final byte[] newer = new byte[12]; // a newer SDK's longer HELLO: read for its first 8 bytes
            newer[7] = (byte)Features.SDK;
            raw.send(RawConnection.frame(MessageType.HELLO, 22, newer));
            final RawConnection.Answer hello = raw.read();
            assertEquals(MessageType.HELLO_RESULT, hello.type());
            assertEquals(22L, hello.correlationId());
            assertEquals(Features.NODE, ByteBuffer.wrap(hello.body()).getLong());
            assertStillServes(raw);
        }
    }

    @Test
    void malformedPolicySubscriptionsGetAnErrorSayingWhatTheBodyIsAndTheConnectionStaysUsable() throws Exception
    {
        final byte[] id = "svc#1".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        final java.util.Map<String, byte[]> bad = new java.util.LinkedHashMap<>();
        bad.put("is empty", new byte[0]);
        bad.put("has unknown flags 101", new byte[] {5});
        bad.put("names an instance without subscribing", new byte[] {2, 1, 'x'});
        bad.put("has no instance id length", new byte[] {3});
        bad.put("has an instance id of 0 bytes", new byte[] {3, 0});
        bad.put("is 4 bytes where its flags say 7", new byte[] {3, 5, 's', 'v'});
        bad.put("is 2 bytes where its flags say 1", new byte[] {1, 0});
        try (RawConnection raw = connect())
        {
            long correlation = 40;
            for (final java.util.Map.Entry<String, byte[]> body : bad.entrySet())
            {
                raw.send(RawConnection.frame(MessageType.POLICIES, correlation++, body.getValue()));
                final String error = readError(raw);
                assertTrue(error.startsWith("MALFORMED_FRAME") && error.contains(body.getKey()) &&
                    error.contains("bit 1: an instance id follows"), body.getKey() + " -> " + error);
            }
            assertStillServes(raw);
            final byte[] good = new byte[2 + id.length];
            good[0] = 3;
            good[1] = (byte)id.length;
            System.arraycopy(id, 0, good, 2, id.length);
            raw.send(RawConnection.frame(MessageType.POLICIES, correlation, good));
            final RawConnection.Answer set = raw.read();
            assertEquals(MessageType.POLICIES_RESULT, set.type());
            assertEquals(correlation, set.correlationId());
            final RawConnection.Answer fleet = raw.read();
            assertEquals(MessageType.FLEET, fleet.type());
            assertEquals(0L, fleet.correlationId());
            assertEquals(2, ByteBuffer.wrap(fleet.body()).getInt(), "this instance and the bystander SDK (two connections, one instance)");
        }
    }

    @Test
    void malformedReleasesGetAnErrorSayingWhatIsWrongAndTheConnectionStaysUsable() throws Exception
    {
        try (RawConnection raw = connect())
        {
            raw.send(RawConnection.frame(MessageType.RELEASE, 61, new byte[5]));
            final String short5 = readError(raw);
            assertTrue(short5.startsWith("MALFORMED_FRAME") && short5.contains("starts with the 8-byte lease id and its 4-byte check"), short5);
            final byte[] twoEntries = new byte[12 + 4];
            twoEntries[13] = 2; // u16 count 2 after the lease id and check
            raw.send(RawConnection.frame(MessageType.RELEASE, 62, twoEntries));
            final String two = readError(raw);
            assertTrue(two.startsWith("MALFORMED_FRAME") && two.contains("exactly 1 entry"), two);
            assertStillServes(raw);
        }
    }

    @Test
    void unsupportedVersionGetsAnErrorAndTheConnectionStaysUsable() throws Exception
    {
        try (RawConnection raw = connect())
        {
            final byte[] bad = RawConnection.frame(MessageType.PING, 3, new byte[0]);
            bad[Frame.VERSION_OFFSET] = 9;
            raw.send(bad);
            assertTrue(readError(raw).contains("protocol version 9 is not supported"));
            assertStillServes(raw);
        }
    }

    @Test
    void invalidUtf8GetsAnErrorNamingTheFieldAndTheConnectionStaysUsable() throws Exception
    {
        try (RawConnection raw = connect())
        {
            final byte[] fields = AcquireCodec.encodeFields("ab", "", "", "/r", "", "");
            fields[2] = (byte)0xC3; // "a" followed by a truncated two-byte sequence
            raw.send(RawConnection.frame(MessageType.ACQUIRE, 5, RawConnection.acquireBody(fields)));
            assertEquals("INVALID_DESCRIPTOR: entry 0: tenant is not valid UTF-8", readError(raw));
            raw.send(RawConnection.frame(MessageType.ACQUIRE, 6, RawConnection.acquireBody(AcquireCodec.encodeFields("a\u0007", "", "", "/r", "", ""))));
            assertEquals("INVALID_DESCRIPTOR: entry 0: tenant contains a control character", readError(raw));
            assertStillServes(raw);
        }
    }

    @Test
    void structurallyBrokenBodyGetsMalformedFrame() throws Exception
    {
        try (RawConnection raw = connect())
        {
            final byte[] body = RawConnection.acquireBody(AcquireCodec.encodeFields("t", "", "", "/r", "", ""));
            body[10] = 100; // the principal's length now overruns the frame
            raw.send(RawConnection.frame(MessageType.BATCH_ACQUIRE, 8, body));
            assertTrue(readError(raw).startsWith("MALFORMED_FRAME"));
            assertStillServes(raw);
        }
    }

    @Test
    void garbageGetsAnErrorOrAClosedConnection() throws Exception
    {
        for (int seed = 1; seed <= 20; seed++)
        {
            try (RawConnection raw = connect())
            {
                final byte[] garbage = new byte[4096];
                new Random(seed).nextBytes(garbage);
                raw.send(garbage);
                raw.timeout(2000);
                // Read whatever comes back until the node closes the connection or goes quiet.
                try
                {
                    while (raw.read() != null)
                    {
                        // ERROR frames for each bad frame it could delimit
                    }
                }
                catch (final java.net.SocketTimeoutException quiet)
                {
                    // It waits for the rest of a frame whose length looked plausible: also fine.
                }
            }
            catch (final SocketException reset)
            {
                // The node reset the connection while we were still writing: a closed connection.
            }
        }
    }

    @Test
    void pipelinedRequestsOnOneConnectionAllGetAnswers() throws Exception
    {
        try (RawConnection raw = connect())
        {
            final java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
            for (int i = 1; i <= 200; i++)
            {
                all.write(RawConnection.frame(MessageType.ACQUIRE, i, RawConnection.acquireBody(AcquireCodec.encodeFields("p" + i, "", "", "/v1/orders/" + i, "", ""))));
            }
            raw.send(all.toByteArray());
            final Set<Long> answered = new HashSet<>();
            for (int i = 0; i < 200; i++)
            {
                final RawConnection.Answer result = raw.read();
                assertEquals(MessageType.RESULT, result.type());
                answered.add(result.correlationId());
            }
            assertEquals(200, answered.size());
        }
    }
}
