package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DecisionIdsTest
{
    private static final long BASE = 0x3f9a0c1be4d27a10L;

    /** A result of two records, the second refused; {@code ids} appends the decision-id section. */
    private static ByteBuf frame(final boolean ids)
    {
        final ByteBuf buf = Unpooled.buffer();
        final int start = ResultCodec.beginBatch(buf, MessageType.BATCH_RESULT, 5, 2);
        ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 0), false, ReasonCode.RATE_LIMITED, 1, 0, 10, 5, 9,
            3, 1);
        ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 1), false, ReasonCode.INVALID_REQUEST, 1, 0, 0, -1,
            0, 3, 1);
        ResultCodec.beginPolicies(buf, 1);
        ResultCodec.appendPolicy(buf, 1, "orders".getBytes(StandardCharsets.UTF_8));
        ResultCodec.beginLeases(buf, 0);
        ResultCodec.beginRefusals(buf, 1);
        ResultCodec.appendRefusal(buf, 1, "principal is required");
        if (ids)
        {
            DecisionIds.appendSection(buf, BASE);
        }
        Frame.finish(buf, start);
        return buf;
    }

    @Test
    void aFrameWithTheSectionNamesEveryRecordAndOneWithoutNamesNone()
    {
        final ResultDecoder decoder = new ResultDecoder();
        final ByteBuf with = frame(true);
        final ByteBuf without = frame(false);
        try
        {
            assertNull(decoder.wrap(with, Frame.bodyOffset(with), Frame.frameEnd(with)));
            assertEquals(BASE, decoder.decisionIdBase());
            assertEquals("principal is required", decoder.refusal(1), "the refusal section still reads");
            assertEquals("3f9a0c1be4d27a10-0", DecisionIds.format(decoder.decisionIdBase(), 0));

            assertNull(decoder.wrap(without, Frame.bodyOffset(without), Frame.frameEnd(without)));
            assertEquals(0, decoder.decisionIdBase(), "a reused decoder forgets the previous frame's base");
        }
        finally
        {
            with.release();
            without.release();
        }
    }

    @Test
    void aMalformedSectionIsRefusedSayingWhatIsWrong()
    {
        final ResultDecoder decoder = new ResultDecoder();
        final ByteBuf buf = frame(true);
        try
        {
            final int end = Frame.frameEnd(buf);
            final int section = end - DecisionIds.SECTION_LENGTH;
            assertTrue(decoder.wrap(buf, Frame.bodyOffset(buf), end - 3).contains("decision-id section is 7 bytes"));
            assertTrue(decoder.wrap(buf, Frame.bodyOffset(buf), section
                + 1).contains("1 bytes after the refusal section"));
            buf.setShort(section, 9);
            assertTrue(decoder.wrap(buf, Frame.bodyOffset(buf), end).contains("says 9 bytes"));
            buf.setShort(section, DecisionIds.BASE_LENGTH);
            buf.setLong(section + 2, 0);
            assertTrue(decoder.wrap(buf, Frame.bodyOffset(buf), end).contains("base 0"));
            assertThrows(IllegalArgumentException.class, () -> DecisionIds.appendSection(Unpooled.buffer(), 0));
        }
        finally
        {
            buf.release();
        }
    }

    @Test
    void printedIdsRoundTripAndBadOnesAreRefusedWithAReason()
    {
        final String id = DecisionIds.format(0x00000000000000ffL, 65535);
        assertEquals("00000000000000ff-65535", id);
        assertNull(DecisionIds.problem(id));
        assertEquals(0xffL, DecisionIds.parseBase(id));
        assertEquals(65535, DecisionIds.parseEntry(id));
        assertEquals(-1L, DecisionIds.parseBase("ffffffffffffffff-0"));
        assertEquals("3f9a0c1be4d27a10-2", DecisionIds.canonical("3F9A0C1BE4D27A10-02"));

        assertNotNull(DecisionIds.problem(""));
        assertTrue(DecisionIds.problem("3f9a0c1be4d27a10").contains("16 hex digits, a dash and a number"));
        assertTrue(DecisionIds.problem("3f9a0c1be4d27a1g-2").contains("16 hex digits"));
        assertTrue(DecisionIds.problem("3f9a0c1be4d27a10-").contains("16 hex digits"));
        assertTrue(DecisionIds.problem("3f9a0c1be4d27a10-65536").contains("at most 65535"));
        assertTrue(DecisionIds.problem("0000000000000000-1").contains("base is 0"));
        assertTrue(DecisionIds.problem("3f9a0c1be4d27a10-\u0663").contains("16 hex digits"), "ASCII digits only");
        assertTrue(DecisionIds.problem("x".repeat(100)).contains("longer than"));
        assertThrows(IllegalArgumentException.class, () -> DecisionIds.parseBase("nope"));
    }
}
