package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ResultAndErrorCodecTest
{
    @Test
    void shouldRoundTripResultsAndTheirPolicyDictionary()
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            final int start = ResultCodec.beginBatch(buf, MessageType.BATCH_RESULT, 99, 2);
            ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 1), false, ReasonCode.RATE_LIMITED, 3,
                0, 10, 250_000_000L, 1_000_000_000L, 4, 2);
            ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 0), true, ReasonCode.ALLOWED, 7,
                9, 10, 0, 100_000_000L, 1, 1);
            ResultCodec.beginPolicies(buf, 2);
            ResultCodec.appendPolicy(buf, 7, "orders".getBytes(StandardCharsets.UTF_8));
            ResultCodec.appendPolicy(buf, 3, "login-per-ip".getBytes(StandardCharsets.UTF_8));
            Frame.finish(buf, start);

            final ResultDecoder decoder = new ResultDecoder();
            assertNull(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf)));
            assertEquals(99, Frame.correlationId(buf));
            assertEquals(2, decoder.count());
            assertTrue(decoder.allowed(0));
            assertEquals(ReasonCode.ALLOWED.code(), decoder.reasonCode(0));
            assertEquals(9, decoder.remaining(0));
            assertFalse(decoder.allowed(1));
            assertEquals(ReasonCode.RATE_LIMITED, ReasonCode.of(decoder.reasonCode(1)));
            assertEquals(250_000_000L, decoder.retryAfterNanos(1));
            assertEquals(1_000_000_000L, decoder.resetAfterNanos(1));
            assertEquals(4, decoder.policyVersion(1));
            assertEquals(2, decoder.windowSeconds(1));
            final int entry = decoder.findPolicy(decoder.policyRef(1));
            assertEquals("login-per-ip", buf.toString(decoder.policyIdOffset(entry), decoder.policyIdLength(entry), StandardCharsets.UTF_8));
            assertEquals(-1, decoder.findPolicy(12345));

            assertNotNull(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf) - 1), "truncated dictionary");
            assertNotNull(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.bodyOffset(buf) + 60), "truncated records");
        }
        finally
        {
            buf.release();
        }
    }

    @Test
    void leasesFollowTheDictionaryOnlyWhenARecordHoldsOne()
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            final int start = ResultCodec.beginBatch(buf, MessageType.BATCH_RESULT, 7, 2);
            ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 0), true, ReasonCode.ALLOWED, 1, 3, 4, 0, 0, 1, 30);
            ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 1), true, ReasonCode.ALLOWED, 1, 2, 4, 0, 0, 1, 30);
            ResultCodec.markLease(buf, ResultCodec.recordOffset(start, 1));
            ResultCodec.beginPolicies(buf, 1);
            ResultCodec.appendPolicy(buf, 1, "exports".getBytes(StandardCharsets.UTF_8));
            final int withoutLeases = buf.writerIndex();
            ResultCodec.beginLeases(buf, 1);
            ResultCodec.appendLease(buf, 1, -42L, 99);
            Frame.finish(buf, start);

            final ResultDecoder decoder = new ResultDecoder();
            assertNull(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf)));
            assertFalse(decoder.holdsLease(0));
            assertEquals(0, decoder.leaseId(0));
            assertTrue(decoder.holdsLease(1));
            assertTrue(decoder.allowed(1));
            assertEquals(-42L, decoder.leaseId(1));
            assertEquals(99, decoder.leaseCheck(1));
            assertNotNull(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf) - 1), "truncated lease section");
            assertNotNull(decoder.wrap(buf, Frame.bodyOffset(buf), withoutLeases + 1), "one stray byte");
            buf.setShort(withoutLeases + 2, 0); // the lease names record 0, which holds none
            assertTrue(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf)).contains("holds no lease"));
        }
        finally
        {
            buf.release();
        }
    }

    @Test
    void aRefusedEntryIsNamedAfterTheLeaseSectionWithWhyAndTheOthersReadAsUsual()
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            final int start = ResultCodec.beginBatch(buf, MessageType.BATCH_RESULT, 7, 3);
            ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 0), true, ReasonCode.ALLOWED, 1, 3, 4, 0, 0, 1, 30);
            ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 1), false, ReasonCode.INVALID_REQUEST, 2, 0, 0, -1, 0, 1, 30);
            ResultCodec.putRecord(buf, ResultCodec.recordOffset(start, 2), false, ReasonCode.RATE_LIMITED, 1, 0, 4, 5, 5, 1, 30);
            ResultCodec.beginPolicies(buf, 2);
            ResultCodec.appendPolicy(buf, 1, "orders".getBytes(StandardCharsets.UTF_8));
            ResultCodec.appendPolicy(buf, 2, "per-user".getBytes(StandardCharsets.UTF_8));
            ResultCodec.beginLeases(buf, 0);
            final int refusals = buf.writerIndex();
            ResultCodec.beginRefusals(buf, 1);
            ResultCodec.appendRefusal(buf, 1, "principal is required by policy 'per-user'");
            Frame.finish(buf, start);

            final ResultDecoder decoder = new ResultDecoder();
            assertNull(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf)));
            assertEquals(ReasonCode.INVALID_REQUEST.code(), decoder.reasonCode(1));
            assertEquals("principal is required by policy 'per-user'", decoder.refusal(1));
            assertNull(decoder.refusal(0));
            assertTrue(decoder.allowed(0));
            assertEquals(ReasonCode.RATE_LIMITED.code(), decoder.reasonCode(2));
            assertNotNull(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf) - 1), "a cut reason");
            buf.setShort(refusals + 2, 2); // names record 2, which was decided
            assertTrue(decoder.wrap(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf)).contains("was not refused"));
        }
        finally
        {
            buf.release();
        }
    }

    @Test
    void shouldRoundTripErrorsAndCutLongMessagesAtACharacterBoundary()
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            ErrorCodec.encode(buf, 5, ErrorCode.INVALID_DESCRIPTOR, "entry 0: tenant is required");
            assertEquals(MessageType.ERROR, Frame.type(buf));
            assertEquals(ErrorCode.INVALID_DESCRIPTOR, ErrorCode.ofOrNull(ErrorCodec.code(buf, Frame.bodyOffset(buf))));
            assertEquals("entry 0: tenant is required", ErrorCodec.message(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf)));

            buf.clear();
            ErrorCodec.encode(buf, 5, ErrorCode.INTERNAL, "é".repeat(2000));
            final String message = ErrorCodec.message(buf, Frame.bodyOffset(buf), Frame.frameEnd(buf));
            assertTrue(message.getBytes(StandardCharsets.UTF_8).length <= ErrorCodec.MAX_MESSAGE_BYTES);
            assertTrue(message.chars().allMatch(c -> c == 'é'));
        }
        finally
        {
            buf.release();
        }
    }
}
