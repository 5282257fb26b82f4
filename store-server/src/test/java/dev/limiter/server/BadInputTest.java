package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static dev.limiter.server.TestNode.SECOND;
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

    /** A raw TCP connection speaking (or not) the frame format. */
    private static final class Raw implements AutoCloseable
    {
        final Socket socket;
        final OutputStream out;
        final DataInputStream in;

        Raw() throws IOException
        {
            socket = new Socket("127.0.0.1", server.port());
            socket.setSoTimeout(5000);
            out = socket.getOutputStream();
            in = new DataInputStream(socket.getInputStream());
        }

        void send(final byte[] bytes) throws IOException
        {
            out.write(bytes);
            out.flush();
        }

        /** Reads one frame: {type, correlation id, body}; null when the node closed the connection. */
        Object[] read() throws IOException
        {
            final int length;
            try
            {
                length = in.readInt();
            }
            catch (final EOFException | SocketException e)
            {
                return null;
            }
            final byte[] rest = new byte[length];
            in.readFully(rest);
            final ByteBuffer b = ByteBuffer.wrap(rest);
            b.get(); // version
            final int type = b.get() & 0xFF;
            b.getShort();
            final long correlationId = b.getLong();
            final byte[] body = new byte[b.remaining()];
            b.get(body);
            return new Object[] { type, correlationId, body };
        }

        /** Reads an ERROR frame and returns "CODE: message". */
        String readError() throws IOException
        {
            final Object[] frame = read();
            assertTrue(frame != null, "expected an ERROR frame, the connection was closed");
            assertEquals(MessageType.ERROR, frame[0]);
            final ByteBuffer body = ByteBuffer.wrap((byte[])frame[2]);
            final ErrorCode code = ErrorCode.ofOrNull(body.getShort() & 0xFFFF);
            final byte[] message = new byte[body.getShort() & 0xFFFF];
            body.get(message);
            return code + ": " + new String(message, StandardCharsets.UTF_8);
        }

        boolean closedByPeer() throws IOException
        {
            try
            {
                return in.read() == -1;
            }
            catch (final SocketException e)
            {
                return true;
            }
        }

        void assertStillServes() throws IOException
        {
            send(frame(MessageType.PING, 4242, new byte[0]));
            final Object[] pong = read();
            assertTrue(pong != null, "the connection should still be open");
            assertEquals(MessageType.PONG, pong[0]);
            assertEquals(4242L, pong[1]);
        }

        @Override
        public void close() throws IOException
        {
            socket.close();
        }
    }

    static byte[] frame(final int type, final long correlationId, final byte[] body)
    {
        final ByteBuffer b = ByteBuffer.allocate(Frame.HEADER_LENGTH + body.length);
        b.putInt(Frame.MIN_LENGTH_FIELD + body.length).put((byte)Frame.VERSION).put((byte)type).putShort((short)0)
            .putLong(correlationId).put(body);
        return b.array();
    }

    static byte[] acquireBody(final byte[] encodedFields)
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            final int start = AcquireCodec.beginBatch(buf, MessageType.ACQUIRE, 0);
            AcquireCodec.appendEntry(buf, 1, encodedFields);
            AcquireCodec.finishBatch(buf, start, 1);
            final byte[] body = new byte[buf.writerIndex() - Frame.HEADER_LENGTH];
            buf.getBytes(Frame.HEADER_LENGTH, body);
            return body;
        }
        finally
        {
            buf.release();
        }
    }

    @Test
    void truncatedFrameWaitsForTheRestAndClosingFreesIt() throws Exception
    {
        try (Raw raw = new Raw())
        {
            final byte[] whole = frame(MessageType.ACQUIRE, 1, acquireBody(AcquireCodec.encodeFields("t", "", "", "/r", "", "")));
            raw.send(java.util.Arrays.copyOf(whole, whole.length - 5));
            Thread.sleep(100);
            // Nothing is answered for half a frame; the rest completes it.
            raw.send(java.util.Arrays.copyOfRange(whole, whole.length - 5, whole.length));
            final Object[] result = raw.read();
            assertEquals(MessageType.RESULT, result[0]);
            assertEquals(1L, result[1]);
            raw.send(java.util.Arrays.copyOf(whole, 20)); // left hanging when we close
        }
    }

    @Test
    void oversizedFrameGetsFrameTooLargeAndTheConnectionCloses() throws Exception
    {
        try (Raw raw = new Raw())
        {
            raw.send(ByteBuffer.allocate(8).putInt(2 << 20).putInt(0).array());
            assertTrue(raw.readError().startsWith("FRAME_TOO_LARGE"));
            assertTrue(raw.closedByPeer());
        }
    }

    @Test
    void negativeLengthGetsMalformedFrameAndTheConnectionCloses() throws Exception
    {
        try (Raw raw = new Raw())
        {
            raw.send(ByteBuffer.allocate(16).putInt(-7).putLong(0).putInt(0).array());
            final String error = raw.readError();
            assertTrue(error.startsWith("MALFORMED_FRAME") && error.contains("negative"), error);
            assertTrue(raw.closedByPeer());
        }
    }

    @Test
    void lengthTooSmallForAHeaderGetsMalformedFrameAndTheConnectionCloses() throws Exception
    {
        try (Raw raw = new Raw())
        {
            raw.send(ByteBuffer.allocate(8).putInt(4).putInt(0x01050000).array());
            assertTrue(raw.readError().startsWith("MALFORMED_FRAME"));
            assertTrue(raw.closedByPeer());
        }
    }

    @Test
    void unknownTypeGetsAnErrorAndTheConnectionStaysUsable() throws Exception
    {
        try (Raw raw = new Raw())
        {
            raw.send(frame(99, 17, new byte[3]));
            final String error = raw.readError();
            assertTrue(error.startsWith("UNKNOWN_TYPE"), error);
            raw.assertStillServes();
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
        try (Raw raw = new Raw())
        {
            long correlation = 40;
            for (final java.util.Map.Entry<String, byte[]> body : bad.entrySet())
            {
                raw.send(frame(MessageType.POLICIES, correlation++, body.getValue()));
                final String error = raw.readError();
                assertTrue(error.startsWith("MALFORMED_FRAME") && error.contains(body.getKey()) &&
                    error.contains("bit 1: an instance id follows"), body.getKey() + " -> " + error);
            }
            raw.assertStillServes();
            final byte[] good = new byte[2 + id.length];
            good[0] = 3;
            good[1] = (byte)id.length;
            System.arraycopy(id, 0, good, 2, id.length);
            raw.send(frame(MessageType.POLICIES, correlation, good));
            final Object[] set = raw.read();
            assertEquals(MessageType.POLICIES_RESULT, set[0]);
            assertEquals(correlation, set[1]);
            final Object[] fleet = raw.read();
            assertEquals(MessageType.FLEET, fleet[0]);
            assertEquals(0L, fleet[1]);
            assertEquals(2, ByteBuffer.wrap((byte[])fleet[2]).getInt(), "this instance and the bystander SDK (two connections, one instance)");
        }
    }

    @Test
    void unsupportedVersionGetsAnErrorAndTheConnectionStaysUsable() throws Exception
    {
        try (Raw raw = new Raw())
        {
            final byte[] bad = frame(MessageType.PING, 3, new byte[0]);
            bad[Frame.VERSION_OFFSET] = 9;
            raw.send(bad);
            assertTrue(raw.readError().contains("protocol version 9 is not supported"));
            raw.assertStillServes();
        }
    }

    @Test
    void invalidUtf8GetsAnErrorNamingTheFieldAndTheConnectionStaysUsable() throws Exception
    {
        try (Raw raw = new Raw())
        {
            final byte[] fields = AcquireCodec.encodeFields("ab", "", "", "/r", "", "");
            fields[2] = (byte)0xC3; // "a" followed by a truncated two-byte sequence
            raw.send(frame(MessageType.ACQUIRE, 5, acquireBody(fields)));
            assertEquals("INVALID_DESCRIPTOR: entry 0: tenant is not valid UTF-8", raw.readError());
            raw.send(frame(MessageType.ACQUIRE, 6, acquireBody(AcquireCodec.encodeFields("a\u0007", "", "", "/r", "", ""))));
            assertEquals("INVALID_DESCRIPTOR: entry 0: tenant contains a control character", raw.readError());
            raw.assertStillServes();
        }
    }

    @Test
    void structurallyBrokenBodyGetsMalformedFrame() throws Exception
    {
        try (Raw raw = new Raw())
        {
            final byte[] body = acquireBody(AcquireCodec.encodeFields("t", "", "", "/r", "", ""));
            body[10] = 100; // the principal's length now overruns the frame
            raw.send(frame(MessageType.BATCH_ACQUIRE, 8, body));
            assertTrue(raw.readError().startsWith("MALFORMED_FRAME"));
            raw.assertStillServes();
        }
    }

    @Test
    void garbageGetsAnErrorOrAClosedConnection() throws Exception
    {
        for (int seed = 1; seed <= 20; seed++)
        {
            try (Raw raw = new Raw())
            {
                final byte[] garbage = new byte[4096];
                new Random(seed).nextBytes(garbage);
                raw.send(garbage);
                raw.socket.setSoTimeout(2000);
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
        try (Raw raw = new Raw())
        {
            final java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
            for (int i = 1; i <= 200; i++)
            {
                all.write(frame(MessageType.ACQUIRE, i, acquireBody(AcquireCodec.encodeFields("p" + i, "", "", "/v1/orders/" + i, "", ""))));
            }
            raw.send(all.toByteArray());
            final Set<Long> answered = new HashSet<>();
            for (int i = 0; i < 200; i++)
            {
                final Object[] result = raw.read();
                assertEquals(MessageType.RESULT, result[0]);
                answered.add((Long)result[1]);
            }
            assertEquals(200, answered.size());
        }
    }
}
