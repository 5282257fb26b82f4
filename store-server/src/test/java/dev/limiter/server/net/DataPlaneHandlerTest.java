package dev.limiter.server.net;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.FrameRouter;
import dev.limiter.server.metrics.ServerMetrics;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.FastThreadLocal;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The data port's pipeline (frame decoder, then {@link DataPlaneHandler}) driven through an
 * {@link EmbeddedChannel}: no sockets, no threads, every answer read back as the frame written.
 * Decision frames (ACQUIRE and friends) need shards and are covered by the socket tests.
 */
class DataPlaneHandlerTest
{
    private static final int MAX_FRAME_BYTES = 64 * 1024;

    private final PolicyState policies = new PolicyState(1);
    private final ServerMetrics metrics = new ServerMetrics();
    private final List<ByteBuf> answers = new ArrayList<>();
    private final EmbeddedChannel channel = dataPort(metrics);

    @AfterEach
    void releaseEverything()
    {
        answers.forEach(ByteBuf::release);
        channel.finishAndReleaseAll();
    }

    private EmbeddedChannel dataPort(final ServerMetrics serverMetrics)
    {
        final PolicyControl control = new PolicyControl(policies, null, 1);
        final FastThreadLocal<FrameRouter> routers = new FastThreadLocal<>()
        {
            @Override
            protected FrameRouter initialValue()
            {
                return new FrameRouter(serverMetrics);
            }
        };
        final PolicyPublisher publisher = new PolicyPublisher(policies, MAX_FRAME_BYTES,
            () -> serverMetrics.refused("sdk-instance-ids-per-address"));
        final DataPlaneHandler handler = new DataPlaneHandler(policies::index, policies::activeExemptions, publisher,
            () -> control, List.of(), serverMetrics, routers, null, () -> "{\"node\":\"test\"}", new SdkReportGate());
        return new EmbeddedChannel(new FrameDecoder(MAX_FRAME_BYTES, null), handler);
    }

    @Test
    void shouldAnswerPingWithPongOfTheSameCorrelationId()
    {
        channel.writeInbound(frame(MessageType.PING, 41, new byte[0]));

        final ByteBuf pong = answer();
        assertEquals(MessageType.PONG, Frame.type(pong));
        assertEquals(41L, Frame.correlationId(pong));
        assertEquals(Frame.MIN_LENGTH_FIELD, pong.getInt(pong.readerIndex()), "a PONG is a bare header");
        assertNull(channel.readOutbound(), "one answer per frame");
    }

    @Test
    void shouldAnswerHelloWithTheNodesFeatures()
    {
        final ByteBuf hello = Unpooled.buffer();
        HelloCodec.writeHello(hello, 7, Features.FLEET);
        channel.writeInbound(hello);

        final ByteBuf result = answer();
        assertEquals(MessageType.HELLO_RESULT, Frame.type(result));
        assertEquals(7L, Frame.correlationId(result));
        assertEquals(Features.NODE, HelloCodec.read(result));
    }

    @Test
    void shouldRefuseAHelloTooShortToHoldFeaturesAndKeepServing()
    {
        channel.writeInbound(frame(MessageType.HELLO, 8, new byte[3]));

        assertError(answer(), 8, ErrorCode.MALFORMED_FRAME);
        assertStillServing(9);
    }

    @Test
    void shouldWaitForAFrameSplitAcrossReadsAndAnswerItOnceWhole()
    {
        final ByteBuf whole = frame(MessageType.PING, 5, new byte[0]);
        final int cut = 3; // inside the length field
        final int cutAgain = 11; // inside the correlation id
        channel.writeInbound(whole.retainedSlice(0, cut));
        assertNull(channel.readOutbound(), "nothing answered for three bytes");
        channel.writeInbound(whole.retainedSlice(cut, cutAgain - cut));
        assertNull(channel.readOutbound(), "nothing answered for a part of the header");
        channel.writeInbound(whole.retainedSlice(cutAgain, whole.readableBytes() - cutAgain));
        whole.release();

        final ByteBuf pong = answer();
        assertEquals(MessageType.PONG, Frame.type(pong));
        assertEquals(5L, Frame.correlationId(pong));
    }

    @Test
    void shouldAnswerEveryFrameOfOneReadInOrder()
    {
        final ByteBuf hello = Unpooled.buffer();
        HelloCodec.writeHello(hello, 2, 0);
        channel.writeInbound(Unpooled.wrappedBuffer(frame(MessageType.PING, 1, new byte[0]), hello,
            frame(MessageType.PING, 3, new byte[0])));

        final ByteBuf first = answer();
        final ByteBuf second = answer();
        final ByteBuf third = answer();
        assertEquals(List.of(MessageType.PONG, MessageType.HELLO_RESULT, MessageType.PONG),
            List.of(Frame.type(first), Frame.type(second), Frame.type(third)));
        assertEquals(List.of(1L, 2L, 3L),
            List.of(Frame.correlationId(first), Frame.correlationId(second), Frame.correlationId(third)));
        assertNull(channel.readOutbound());
    }

    @Test
    void shouldAnswerAnUnknownTypeWithUnknownTypeAndKeepTheConnectionUsable()
    {
        channel.writeInbound(frame(99, 12, new byte[] {1, 2, 3}));

        final ByteBuf error = answer();
        assertError(error, 12, ErrorCode.UNKNOWN_TYPE);
        assertTrue(errorMessage(error).contains("message type"), errorMessage(error));
        assertStillServing(13);
    }

    @Test
    void shouldAnswerAnotherProtocolVersionWithUnsupportedVersionAndKeepServing()
    {
        final ByteBuf future = frame(MessageType.PING, 21, new byte[0]);
        future.setByte(Frame.VERSION_OFFSET, Frame.VERSION + 1);
        channel.writeInbound(future);

        final ByteBuf error = answer();
        assertError(error, 21, ErrorCode.UNSUPPORTED_VERSION);
        assertTrue(errorMessage(error).contains("version " + Frame.VERSION), errorMessage(error));
        assertStillServing(22);
    }

    @Test
    void shouldCloseWithMalformedFrameWhenTheLengthCannotHoldAHeader()
    {
        final ByteBuf shortFrame = Unpooled.buffer();
        shortFrame.writeInt(4).writeByte(Frame.VERSION).writeByte(MessageType.PING).writeShort(0);
        channel.writeInbound(shortFrame);

        final ByteBuf error = answer();
        assertError(error, 0, ErrorCode.MALFORMED_FRAME);
        assertTrue(errorMessage(error).contains("frame length 4"), errorMessage(error));
        assertFalse(channel.isOpen(), "a peer that is not framing is not read any further");
    }

    @Test
    void shouldCloseWithMalformedFrameOnANegativeLength()
    {
        channel.writeInbound(Unpooled.buffer().writeInt(-1).writeLong(0));

        assertError(answer(), 0, ErrorCode.MALFORMED_FRAME);
        assertFalse(channel.isOpen());
    }

    @Test
    void shouldCloseWithFrameTooLargeAsSoonAsTheLengthIsRead()
    {
        channel.writeInbound(Unpooled.buffer().writeInt(MAX_FRAME_BYTES).writeByte(Frame.VERSION));

        final ByteBuf error = answer();
        assertError(error, 0, ErrorCode.FRAME_TOO_LARGE);
        assertTrue(errorMessage(error).contains("split the batch"), errorMessage(error));
        assertFalse(channel.isOpen());
    }

    @Test
    void shouldTellAnHttpClientInHttpThatThisIsNotTheAdminPort()
    {
        channel.writeInbound(Unpooled.copiedBuffer("GET /metrics HTTP/1.1\r\n\r\n", StandardCharsets.US_ASCII));

        final String response = answer().toString(StandardCharsets.UTF_8);
        assertTrue(response.startsWith("HTTP/1.1 400 Bad Request"), response);
        assertTrue(response.contains("admin port"), response);
        assertFalse(channel.isOpen());
    }

    @Test
    void shouldRefuseMembershipChangesOnTheDataPort()
    {
        channel.writeInbound(frame(MessageType.MEMBERS, 31, "n9=127.0.0.1:7401".getBytes(StandardCharsets.UTF_8)));

        assertError(answer(), 31, ErrorCode.FORBIDDEN);
        assertTrue(metrics.scrape().contains("reason=\"members-on-data-port\"} 1.0"), "the refusal is counted");
        assertStillServing(32);
    }

    @Test
    void shouldAnswerStatusWithTheNodesJson()
    {
        channel.writeInbound(frame(MessageType.STATUS, 51, new byte[0]));

        final ByteBuf status = answer();
        assertEquals(MessageType.STATUS_RESULT, Frame.type(status));
        assertEquals("{\"node\":\"test\"}", status.toString(Frame.bodyOffset(status),
            Frame.frameEnd(status) - Frame.bodyOffset(status), StandardCharsets.UTF_8));
    }

    @Test
    void shouldTurnAwayAConnectionAboveThePortsCapWithOverloaded()
    {
        final ConnectionGuard.Limits limits = new ConnectionGuard.Limits("data", 1, 60_000, 60_000, metrics,
            (ch, reason, why) ->
            {
                final ByteBuf out = ch.alloc().buffer();
                final ErrorCode code = "max-connections".equals(reason) ? ErrorCode.OVERLOADED
                    : ErrorCode.MALFORMED_FRAME;
                ErrorCodec.encode(out, 0, code, why);
                return out;
            });
        final EmbeddedChannel first = new EmbeddedChannel(new ConnectionGuard(limits, true));
        final EmbeddedChannel second = new EmbeddedChannel(new ConnectionGuard(limits, true));
        try
        {
            assertNull(first.readOutbound(), "the first connection is served");
            final ByteBuf refusal = second.readOutbound();
            answers.add(refusal);
            assertError(refusal, 0, ErrorCode.OVERLOADED);
            assertTrue(errorMessage(refusal).contains("at most 1 connections"), errorMessage(refusal));
            assertFalse(second.isOpen());
            assertTrue(first.isOpen());
        }
        finally
        {
            first.finishAndReleaseAll();
            second.finishAndReleaseAll();
        }
    }

    private void assertStillServing(final long correlationId)
    {
        assertTrue(channel.isOpen(), "the connection stays open");
        channel.writeInbound(frame(MessageType.PING, correlationId, new byte[0]));
        final ByteBuf pong = answer();
        assertEquals(MessageType.PONG, Frame.type(pong), "the connection still answers");
        assertEquals(correlationId, Frame.correlationId(pong));
    }

    /** The next frame the pipeline wrote; released after the test. */
    private ByteBuf answer()
    {
        final ByteBuf out = channel.readOutbound();
        assertTrue(out != null, "an answer was written");
        answers.add(out);
        return out;
    }

    private static void assertError(final ByteBuf answer, final long correlationId, final ErrorCode code)
    {
        assertEquals(MessageType.ERROR, Frame.type(answer), "an ERROR frame");
        assertEquals(correlationId, Frame.correlationId(answer));
        assertEquals(code, ErrorCode.ofOrNull(ErrorCodec.code(answer, Frame.bodyOffset(answer))), errorMessage(answer));
    }

    private static String errorMessage(final ByteBuf error)
    {
        return ErrorCodec.message(error, Frame.bodyOffset(error), Frame.frameEnd(error));
    }

    private static ByteBuf frame(final int type, final long correlationId, final byte[] body)
    {
        final ByteBuf out = Unpooled.buffer();
        final int start = Frame.begin(out, type, correlationId);
        out.writeBytes(body);
        Frame.finish(out, start);
        return out;
    }
}
