package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** POLICIES, POLICIES_RESULT, FLEET and RELEASE: what one end writes the other reads, and a malformed body is named. */
class SubscriptionAndReleaseCodecTest
{
    private static ByteBuf frame(final int type, final byte... body)
    {
        final ByteBuf out = Unpooled.buffer();
        final int start = Frame.begin(out, type, 0);
        out.writeBytes(body);
        Frame.finish(out, start);
        return out;
    }

    @Test
    void aSubscriptionWithAnInstanceIdAndOneWithoutReadBackAsWritten()
    {
        final ByteBuf counted = Unpooled.buffer();
        PoliciesCodec.writeRequest(counted, 0, true, "sdk-7f3a".getBytes(StandardCharsets.UTF_8));
        assertEquals(MessageType.POLICIES, Frame.type(counted));
        assertEquals(new PoliciesCodec.Request(true, "sdk-7f3a"), PoliciesCodec.readRequest(counted));

        final ByteBuf plain = Unpooled.buffer();
        PoliciesCodec.writeRequest(plain, 5, true, null);
        assertEquals(5, Frame.correlationId(plain));
        assertEquals(new PoliciesCodec.Request(true, null), PoliciesCodec.readRequest(plain));

        final ByteBuf once = Unpooled.buffer();
        PoliciesCodec.writeRequest(once, 0, false, null);
        assertEquals(new PoliciesCodec.Request(false, null), PoliciesCodec.readRequest(once));
    }

    @Test
    void aWriterRefusesAnInstanceIdItCouldNotSend()
    {
        assertThrows(IllegalArgumentException.class, () -> PoliciesCodec.writeRequest(Unpooled.buffer(), 0, false, new byte[] {1}));
        assertThrows(IllegalArgumentException.class, () -> PoliciesCodec.writeRequest(Unpooled.buffer(), 0, true, new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> PoliciesCodec.writeRequest(Unpooled.buffer(), 0, true, new byte[256]));
        assertThrows(IllegalArgumentException.class, () -> FleetCodec.write(Unpooled.buffer(), -1));
    }

    @Test
    void aMalformedSubscriptionIsRefusedSayingWhatIsWrongAndHowTheBodyIsLaidOut()
    {
        final String layout = "; it is u8 flags (bit 0: subscribe, bit 1: an instance id follows as u8 length and 1-255 UTF-8 bytes)";
        assertRefused("POLICIES body is empty" + layout, frame(MessageType.POLICIES));
        assertRefused("POLICIES body has unknown flags 101" + layout, frame(MessageType.POLICIES, (byte)5));
        assertRefused("POLICIES body names an instance without subscribing (bit 1 needs bit 0)" + layout,
            frame(MessageType.POLICIES, (byte)2, (byte)1, (byte)'a'));
        assertRefused("POLICIES body has no instance id length" + layout, frame(MessageType.POLICIES, (byte)3));
        assertRefused("POLICIES body has an instance id of 0 bytes" + layout, frame(MessageType.POLICIES, (byte)3, (byte)0));
        assertRefused("POLICIES body is 3 bytes where its flags say 4" + layout, frame(MessageType.POLICIES, (byte)3, (byte)2, (byte)'a'));
        assertRefused("POLICIES body is 2 bytes where its flags say 1" + layout, frame(MessageType.POLICIES, (byte)1, (byte)0));
    }

    private static void assertRefused(final String message, final ByteBuf frame)
    {
        assertEquals(message, assertThrows(IllegalArgumentException.class, () -> PoliciesCodec.readRequest(frame)).getMessage());
    }

    @Test
    void helloAndItsResultCarryFeatureBitsAndANewerPeersLongerBodyIsReadForThem()
    {
        final ByteBuf hello = Unpooled.buffer();
        HelloCodec.writeHello(hello, 5, Features.SDK);
        assertEquals(MessageType.HELLO, Frame.type(hello));
        assertEquals(5, Frame.correlationId(hello));
        assertEquals(Features.SDK, HelloCodec.read(hello));
        final ByteBuf result = Unpooled.buffer();
        HelloCodec.writeResult(result, 5, Features.FLEET | 1L << 40);
        assertEquals(MessageType.HELLO_RESULT, Frame.type(result));
        assertTrue(Features.has(HelloCodec.read(result), Features.FLEET));
        assertFalse(Features.has(HelloCodec.read(result), Features.SHARD_MAP));
        assertEquals("[FLEET,bit 40]", Features.names(HelloCodec.read(result)));
        final ByteBuf longer = frame(MessageType.HELLO_RESULT, new byte[] {0, 0, 0, 0, 0, 0, 0, 3, 9, 9});
        assertEquals(Features.FLEET | Features.SHARD_MAP, HelloCodec.read(longer), "appended fields are skipped");
        assertEquals("HELLO_RESULT body is 3 bytes; it starts with a u64 of feature bits",
            assertThrows(IllegalArgumentException.class, () -> HelloCodec.read(frame(MessageType.HELLO_RESULT, new byte[] {0, 0, 1}))).getMessage());
    }

    @Test
    void aPolicySetReadsBackWithItsVersionAndATruncatedOneIsNamed()
    {
        final byte[] set = {10, 3, 'a', 'b', 'c'};
        final ByteBuf out = Unpooled.buffer();
        PoliciesCodec.writeResult(out, 42, 9_000_000_001L, set);
        assertEquals(PoliciesCodec.resultFrameLength(set), out.readableBytes());
        assertEquals(MessageType.POLICIES_RESULT, Frame.type(out));
        assertEquals(42, Frame.correlationId(out));
        final PoliciesCodec.Result result = PoliciesCodec.readResult(out);
        assertEquals(9_000_000_001L, result.version());
        assertArrayEquals(set, result.set());

        final ByteBuf empty = Unpooled.buffer();
        PoliciesCodec.writeResult(empty, 0, 1, new byte[0]);
        assertArrayEquals(new byte[0], PoliciesCodec.readResult(empty).set());

        assertEquals("POLICIES_RESULT body is 7 bytes; it starts with the 8-byte set version",
            assertThrows(IllegalArgumentException.class, () -> PoliciesCodec.readResult(frame(MessageType.POLICIES_RESULT, new byte[7]))).getMessage());
    }

    @Test
    void aFleetCountReadsBackAndAMalformedOneIsNamed()
    {
        final ByteBuf out = Unpooled.buffer();
        FleetCodec.write(out, 1234);
        assertEquals(FleetCodec.FRAME_LENGTH, out.readableBytes());
        assertEquals(MessageType.FLEET, Frame.type(out));
        assertEquals(1234, FleetCodec.read(out));

        assertEquals("FLEET body is 3 bytes; it is one i32, the count of SDK instances",
            assertThrows(IllegalArgumentException.class, () -> FleetCodec.read(frame(MessageType.FLEET, new byte[3]))).getMessage());
        assertEquals("FLEET counts -1 SDK instances; a count is 0 or more",
            assertThrows(IllegalArgumentException.class, () -> FleetCodec.read(frame(MessageType.FLEET, (byte)-1, (byte)-1, (byte)-1, (byte)-1)))
                .getMessage());
    }

    @Test
    void aReleaseCarriesItsLeaseAndTheAcquireThatTookItAsOneEntry()
    {
        final byte[] fields = AcquireCodec.encodeFields("acme", "u1", "GET", "/orders", "10.0.0.1", "");
        final byte[] body = ReleaseCodec.body(0x8000_0000_0000_0001L, -7, 3, fields);
        final ByteBuf frame = frame(MessageType.RELEASE, body);
        final int start = Frame.bodyOffset(frame);
        assertNull(ReleaseCodec.prefixProblem(start, Frame.frameEnd(frame)));
        assertEquals(0x8000_0000_0000_0001L, ReleaseCodec.leaseId(frame, start));
        assertEquals(-7, ReleaseCodec.check(frame, start));

        final AcquireDecoder decoder = new AcquireDecoder();
        assertNull(decoder.wrap(frame, start + ReleaseCodec.PREFIX_LENGTH, Frame.frameEnd(frame), true));
        assertEquals(1, decoder.count());
        assertTrue(decoder.next());
        assertEquals(3, decoder.cost());
        assertEquals("acme", decoder.buffer().toString(decoder.offset(DescriptorField.TENANT), decoder.length(DescriptorField.TENANT),
            StandardCharsets.UTF_8));
        assertEquals("/orders", decoder.buffer().toString(decoder.offset(DescriptorField.ROUTE), decoder.length(DescriptorField.ROUTE),
            StandardCharsets.UTF_8));

        assertEquals("RELEASE body is 11 bytes; it starts with the 8-byte lease id and its 4-byte check", ReleaseCodec.prefixProblem(0, 11));
    }
}
