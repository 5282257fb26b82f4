package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.FleetCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PoliciesCodec;
import dev.limiter.protocol.policy.PolicySet;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the SDK reads from a node, through the same decoder and adapter as a connection, with no socket. */
class FrameAdapterTest
{
    private final List<String> heard = new ArrayList<>();
    private final EmbeddedChannel channel = new EmbeddedChannel(
        new LengthFieldBasedFrameDecoder(1 << 20, 0, Frame.LENGTH_FIELD_LENGTH, 0, 0, true),
        new FrameAdapter(new FrameAdapter.Listener()
        {
            @Override
            public void result(final ByteBuf frame, final long correlationId)
            {
                heard.add("result " + correlationId + " " + (Frame.frameEnd(frame) - Frame.bodyOffset(frame)));
            }

            @Override
            public void error(final long correlationId, final int code, final String message)
            {
                heard.add("error " + correlationId + " " + code + " " + message);
            }

            @Override
            public void done(final long correlationId)
            {
                heard.add("done " + correlationId);
            }

            @Override
            public void policies(final PoliciesCodec.Result result)
            {
                heard.add("policies " + result.version());
            }

            @Override
            public void shardMap(final dev.limiter.protocol.ShardMap map)
            {
                heard.add("shard map");
            }

            @Override
            public void fleet(final int instances)
            {
                heard.add("fleet " + instances);
            }

            @Override
            public void hello(final long correlationId, final long features)
            {
                heard.add("hello " + correlationId + " " + Features.names(features));
            }

            @Override
            public void unreadable(final String why)
            {
                heard.add("unreadable");
            }
        }, "127.0.0.1:7400"));

    private static ByteBuf pong(final long correlationId)
    {
        final ByteBuf out = Unpooled.buffer();
        Frame.finish(out, Frame.begin(out, MessageType.PONG, correlationId));
        return out;
    }

    private static ByteBuf fleet(final int instances)
    {
        final ByteBuf out = Unpooled.buffer();
        FleetCodec.write(out, instances);
        return out;
    }

    @Test
    void aFrameSplitAcrossReadsIsHandedOnOnceWhole()
    {
        final ByteBuf whole = pong(42);
        channel.writeInbound(whole.readRetainedSlice(5));
        assertTrue(heard.isEmpty(), "half a frame is not a message");
        channel.writeInbound(whole.readRetainedSlice(whole.readableBytes()));
        whole.release();
        assertEquals(List.of("done 42"), heard);
    }

    @Test
    void twoFramesInOneReadAreHandedOnInOrder()
    {
        final ByteBuf both = Unpooled.buffer();
        both.writeBytes(fleet(7));
        final ByteBuf policies = Unpooled.buffer();
        PoliciesCodec.writeResult(policies, 0, 12, PolicySet.newBuilder().setVersion(12).build().toByteArray());
        both.writeBytes(policies);
        policies.release();
        channel.writeInbound(both);
        assertEquals(List.of("fleet 7", "policies 12"), heard);
    }

    @Test
    void aHelloAnswerIsReadForTheNodesFeatures()
    {
        final ByteBuf hello = Unpooled.buffer();
        HelloCodec.writeResult(hello, 1, Features.FLEET | Features.SHARD_MAP);
        channel.writeInbound(hello);
        assertEquals(List.of("hello 1 [FLEET,SHARD_MAP]"), heard);
    }

    @Test
    void anErrorIsReadThroughItsCodecWithCodeAndMessage()
    {
        final ByteBuf error = Unpooled.buffer();
        ErrorCodec.encode(error, 9, ErrorCode.NOT_LEADER, "127.0.0.1:7401");
        channel.writeInbound(error);
        assertEquals(List.of("error 9 " + ErrorCode.NOT_LEADER.code() + " 127.0.0.1:7401"), heard);
    }

    @Test
    void aMessageThisSdkCannotReadIsDroppedAndTheNextIsStillRead()
    {
        final ByteBuf bad = Unpooled.buffer();
        Frame.finish(bad, Frame.begin(bad, MessageType.FLEET, 0)); // a FLEET with no count
        channel.writeInbound(bad);
        channel.writeInbound(pong(3));
        assertEquals(List.of("done 3"), heard);
        assertTrue(channel.isActive());
    }

    @Test
    void aFrameOfAnotherProtocolVersionClosesTheChannel()
    {
        final ByteBuf other = pong(1);
        other.setByte(Frame.VERSION_OFFSET, Frame.VERSION + 1);
        channel.writeInbound(other);
        assertEquals(List.of("unreadable"), heard);
        assertFalse(channel.isActive());
    }
}
