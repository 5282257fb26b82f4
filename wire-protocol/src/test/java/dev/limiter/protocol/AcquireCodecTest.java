package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AcquireCodecTest
{
    private final ByteBuf buf = Unpooled.buffer();
    private final AcquireDecoder decoder = new AcquireDecoder();

    @AfterEach
    void release()
    {
        buf.release();
    }

    private void frame(final int cost, final byte[]... fieldsPerEntry)
    {
        buf.clear();
        final int start = AcquireCodec.beginBatch(buf, MessageType.BATCH_ACQUIRE, 7);
        for (final byte[] fields : fieldsPerEntry)
        {
            AcquireCodec.appendEntry(buf, cost, fields);
        }
        AcquireCodec.finishBatch(buf, start, fieldsPerEntry.length);
    }

    private String field(final DescriptorField f)
    {
        return buf.toString(decoder.offset(f), decoder.length(f), StandardCharsets.UTF_8);
    }

    private String wrap()
    {
        return decoder.wrap(buf, Frame.HEADER_LENGTH, buf.writerIndex(), false);
    }

    @Test
    void shouldRoundTripABatchWithEveryField()
    {
        frame(3,
            AcquireCodec.encodeFields("acme", "alice", "POST", "/v1/orders/1", "10.0.0.1", "eu-west-1"),
            AcquireCodec.encodeFields("globex", "", "", "/v1/search", "", ""));
        assertEquals(MessageType.BATCH_ACQUIRE, Frame.type(buf));
        assertEquals(7, Frame.correlationId(buf));
        assertEquals(buf.writerIndex(), Frame.frameEnd(buf));
        assertNull(wrap());
        assertEquals(2, decoder.count());
        assertTrue(decoder.next());
        assertEquals(0, decoder.index());
        assertEquals(3, decoder.cost());
        assertEquals("acme", field(DescriptorField.TENANT));
        assertEquals("alice", field(DescriptorField.PRINCIPAL));
        assertEquals("POST", field(DescriptorField.METHOD));
        assertEquals("/v1/orders/1", field(DescriptorField.ROUTE));
        assertEquals("10.0.0.1", field(DescriptorField.CLIENT_IP));
        assertEquals("eu-west-1", field(DescriptorField.REGION));
        assertTrue(decoder.next());
        assertEquals("globex", field(DescriptorField.TENANT));
        assertEquals("", field(DescriptorField.PRINCIPAL));
        assertFalse(decoder.next());
        assertFalse(decoder.failed());
    }

    @Test
    void shouldEncodeTheExampleInDocsProtocolByteForByte()
    {
        final int start = AcquireCodec.beginBatch(buf, MessageType.ACQUIRE, 7);
        AcquireCodec.appendEntry(buf, 1, AcquireCodec.encodeFields("acme", "", "GET", "/v1/orders/42", "", ""));
        AcquireCodec.finishBatch(buf, start, 1);
        final String expected = "0000002f 01010000 0000000000000007 00010000 00000001 0461636d65 00 03474554 " +
            "000d2f76312f6f72646572732f3432 00 00";
        assertEquals(expected.replace(" ", ""), io.netty.buffer.ByteBufUtil.hexDump(buf));
    }

    @Test
    void shouldTrimWhitespaceAndDropTheQueryFromTheRoute()
    {
        frame(1, AcquireCodec.encodeFields("  acme\t", "", " get ", " /v1/orders/9?expand=1#x ", "", ""));
        assertNull(wrap());
        assertTrue(decoder.next(), decoder.errorMessage());
        assertEquals("acme", field(DescriptorField.TENANT));
        assertEquals("get", field(DescriptorField.METHOD), "case is compared insensitively, not rewritten on the wire");
        assertEquals("/v1/orders/9", field(DescriptorField.ROUTE));
    }

    private void assertInvalid(final String expectedFragment, final byte[] fields)
    {
        frame(1, fields);
        assertNull(wrap());
        assertFalse(decoder.next());
        assertTrue(decoder.failed());
        assertEquals(ErrorCode.INVALID_DESCRIPTOR, decoder.errorCode());
        assertTrue(decoder.errorMessage().contains(expectedFragment), decoder.errorMessage());
    }

    private static byte[] withRawTenant(final byte[] tenant)
    {
        final byte[] rest = AcquireCodec.encodeFields("x", "", "", "/r", "", "");
        final byte[] out = new byte[1 + tenant.length + rest.length - 2];
        out[0] = (byte)tenant.length;
        System.arraycopy(tenant, 0, out, 1, tenant.length);
        System.arraycopy(rest, 2, out, 1 + tenant.length, rest.length - 2);
        return out;
    }

    @Test
    void shouldRejectInvalidUtf8()
    {
        assertInvalid("entry 0: tenant is not valid UTF-8", withRawTenant(new byte[] { 'a', (byte)0xC3 }));
        assertInvalid("not valid UTF-8", withRawTenant(new byte[] { (byte)0xC0, (byte)0x80 })); // overlong NUL
        assertInvalid("not valid UTF-8", withRawTenant(new byte[] { (byte)0xED, (byte)0xA0, (byte)0x80 })); // surrogate
        assertInvalid("not valid UTF-8", withRawTenant(new byte[] { (byte)0xFF }));
        assertInvalid("not valid UTF-8", withRawTenant(new byte[] { (byte)0xF4, (byte)0x90, (byte)0x80, (byte)0x80 }));
    }

    @Test
    void shouldRejectControlCharacters()
    {
        assertInvalid("tenant contains a control character", AcquireCodec.encodeFields("a\u0000b", "", "", "/r", "", ""));
        assertInvalid("control character", AcquireCodec.encodeFields("a\u007Fb", "", "", "/r", "", ""));
        assertInvalid("principal contains a control character", AcquireCodec.encodeFields("a", "x\u0085y", "", "/r", "", ""));
        assertInvalid("route contains a control character", AcquireCodec.encodeFields("a", "", "", "/r\n/x", "", ""));
    }

    @Test
    void shouldEnforceRequiredFieldsLengthsAndCharacterSets()
    {
        assertInvalid("tenant is required", AcquireCodec.encodeFields("  ", "", "", "/r", "", ""));
        assertInvalid("route is required", AcquireCodec.encodeFields("a", "", "", "", "", ""));
        assertInvalid("tenant is too long (65 bytes; at most 64)", AcquireCodec.encodeFields("t".repeat(65), "", "", "/r", "", ""));
        assertInvalid("route must start with '/'", AcquireCodec.encodeFields("a", "", "", "r/x", "", ""));
        assertInvalid("route must not contain '.' or '..' segments", AcquireCodec.encodeFields("a", "", "", "/a/../admin", "", ""));
        assertInvalid("method contains a character", AcquireCodec.encodeFields("a", "", "GE T", "/r", "", ""));
        assertInvalid("clientIp is not an IPv4 or IPv6 address", AcquireCodec.encodeFields("a", "", "", "/r", "10.0.0.1; DROP", ""));
        assertInvalid("clientIp is not an IPv4 or IPv6 address", AcquireCodec.encodeFields("a", "", "", "/r", "abc", ""));
        assertInvalid("region contains a character", AcquireCodec.encodeFields("a", "", "", "/r", "", "eu west"));
    }

    @Test
    void shouldNameTheEntryThatFailed()
    {
        frame(1, AcquireCodec.encodeFields("ok", "", "", "/r", "", ""), AcquireCodec.encodeFields("", "", "", "/r", "", ""));
        assertNull(wrap());
        assertTrue(decoder.next());
        assertFalse(decoder.next());
        assertEquals("entry 1: tenant is required and was empty", decoder.errorMessage());
    }

    @Test
    void shouldTakeCostZeroAsACheckAndRejectANegativeCost()
    {
        frame(0, AcquireCodec.encodeFields("a", "", "", "/r", "", ""));
        assertNull(wrap());
        assertTrue(decoder.next(), decoder.errorMessage());
        assertEquals(0, decoder.cost());
        frame(-5, AcquireCodec.encodeFields("a", "", "", "/r", "", ""));
        assertNull(wrap());
        assertFalse(decoder.next());
        assertEquals(ErrorCode.INVALID_COST, decoder.errorCode());
        assertTrue(decoder.errorMessage().contains("cost must be a positive integer (or 0 to check without charging), was -5"));
    }

    @Test
    void shouldMarkAnEnvoyDescriptorByItsFlagAndNoOtherEntry()
    {
        final byte[] envoy = AcquireCodec.encodeEnvoyFields("e:10.0.0.1", "/envoy/_edge/_k/_v");
        final byte[] sdk = AcquireCodec.encodeFields("e:10.0.0.1", "", "ENVOY", "/envoy/_edge/_k/_v", "", "");
        assertTrue(AcquireCodec.isEnvoy(envoy));
        assertFalse(AcquireCodec.isEnvoy(sdk));
        frame(1, envoy, sdk);
        assertNull(wrap());
        assertTrue(decoder.next(), decoder.errorMessage());
        assertTrue(decoder.envoy());
        assertEquals(0, decoder.length(DescriptorField.METHOD));
        assertEquals("/envoy/_edge/_k/_v", decoder.buffer().toString(decoder.offset(DescriptorField.ROUTE),
            decoder.length(DescriptorField.ROUTE), StandardCharsets.UTF_8));
        assertTrue(decoder.next(), decoder.errorMessage());
        assertFalse(decoder.envoy(), "a method of ENVOY is just a method");
        assertFalse(decoder.next());
        assertFalse(decoder.failed());
    }

    @Test
    void shouldRejectStructuralDamage()
    {
        frame(1, AcquireCodec.encodeFields("a", "", "", "/r", "", ""));
        // Truncated: the body ends inside the entry.
        assertNull(decoder.wrap(buf, Frame.HEADER_LENGTH, buf.writerIndex() - 3, false));
        assertFalse(decoder.next());
        assertEquals(ErrorCode.MALFORMED_FRAME, decoder.errorCode());
        // Trailing bytes after the last entry.
        buf.writeByte(0);
        assertNull(decoder.wrap(buf, Frame.HEADER_LENGTH, buf.writerIndex(), false));
        assertTrue(decoder.next());
        assertFalse(decoder.next());
        assertTrue(decoder.failed());
        assertTrue(decoder.errorMessage().contains("1 unexpected bytes"), decoder.errorMessage());
    }

    @Test
    void shouldRejectBadCounts()
    {
        frame(1, AcquireCodec.encodeFields("a", "", "", "/r", "", ""), AcquireCodec.encodeFields("b", "", "", "/r", "", ""));
        assertNotNull(decoder.wrap(buf, Frame.HEADER_LENGTH, buf.writerIndex(), true), "ACQUIRE must carry one entry");
        buf.setShort(Frame.HEADER_LENGTH, 0);
        assertNotNull(wrap());
        buf.setShort(Frame.HEADER_LENGTH, AcquireCodec.MAX_BATCH + 1);
        assertNotNull(wrap());
        assertEquals(ErrorCode.BATCH_TOO_LARGE, decoder.errorCode());
        buf.setShort(Frame.HEADER_LENGTH, 1000);
        assertTrue(wrap().contains("claims 1000 entries"));
        assertNotNull(decoder.wrap(buf, Frame.HEADER_LENGTH, Frame.HEADER_LENGTH + 2, false));
    }
}
