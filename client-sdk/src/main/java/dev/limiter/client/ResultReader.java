package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultDecoder;
import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Turns a RESULT or BATCH_RESULT frame into the decisions of the calls it answers, in entry order,
 * and completes them. A policy id is made a String once per connection and policy, not once per
 * decision. One per connection; event loop only.
 */
final class ResultReader
{
    private final ResultDecoder decoder = new ResultDecoder();
    private final PolicyIds policyIds = new PolicyIds();
    private final String peer;

    ResultReader(final String peer)
    {
        this.peer = peer;
    }

    /**
     * Answers the calls of {@code entry} from {@code frame}: a request's (RELEASE) one RELEASED
     * record, or one record per call.
     *
     * @param hotKeys told of each call whose answer flags its key as hot, before its caller sees the answer
     */
    void answer(final InFlightTable.Entry entry, final ByteBuf frame, final int bodyOffset, final int bodyEnd,
        final Consumer<Descriptor> hotKeys)
    {
        final String malformed = decoder.wrap(frame, bodyOffset, bodyEnd);
        if (entry.request != null)
        {
            if (malformed != null || decoder.count() != 1 || decoder.reasonCode(0) != ReasonCode.RELEASED.code())
            {
                entry.request.completeExceptionally(new LimiterException("malformed answer to a release from " + peer
                    + ": " +
                    (malformed != null ? malformed : decoder.count() + " records, reason " + decoder.reasonCode(0))));
            }
            else
            {
                entry.request.complete(null);
            }
            return;
        }
        if (malformed != null || decoder.count() != entry.calls.length)
        {
            entry.fail(new LimiterException("malformed answer from " + peer + ": " +
                (malformed != null ? malformed : decoder.count() + " results for " + entry.calls.length
                    + " requests")));
            return;
        }
        for (int i = 0; i < entry.calls.length; i++)
        {
            answer(entry.calls[i], i, hotKeys);
        }
    }

    private void answer(final PendingCall call, final int i, final Consumer<Descriptor> hotKeys)
    {
        final int reason = decoder.reasonCode(i);
        if (reason == ReasonCode.INVALID_REQUEST.code())
        {
            // This call alone could not be decided as sent (the frame's others were).
            final String why = decoder.refusal(i);
            call.completeExceptionally(new LimiterRequestException(ErrorCode.INVALID_DESCRIPTOR,
                why == null ? "the node could not decide this request as it was sent" : why));
            return;
        }
        final boolean allowed = decoder.allowed(i);
        // A code from a newer node is read by its allowed flag rather than failing the call.
        final Decision answer = new Decision(
            allowed,
            ReasonCode.known(reason) ? ReasonCode.of(reason) : allowed ? ReasonCode.ALLOWED : ReasonCode.RATE_LIMITED,
            decoder.remaining(i),
            decoder.limit(i),
            decoder.retryAfterNanos(i),
            decoder.resetAfterNanos(i),
            policyIds.resolve(decoder, decoder.policyRef(i)),
            decoder.policyVersion(i),
            decoder.windowSeconds(i),
            decoder.decisionIdBase(),
            i);
        if (decoder.hotKey(i))
        {
            hotKeys.accept(call.descriptor); // its next call may take a token block
        }
        call.complete(decoder.holdsLease(i) ? answer.withLease(decoder.leaseId(i), decoder.leaseCheck(i)) : answer);
    }

    /** The policy refs of result frames as id strings, made once per connection and policy. */
    private static final class PolicyIds
    {
        private String[] ids = new String[16];
        private byte[][] bytes = new byte[16][];

        String resolve(final ResultDecoder decoder, final int ref)
        {
            final int entry = decoder.findPolicy(ref);
            if (entry < 0)
            {
                return "unknown";
            }
            final ByteBuf buf = decoder.buffer();
            final int offset = decoder.policyIdOffset(entry);
            final int length = decoder.policyIdLength(entry);
            if (ref >= ids.length)
            {
                final int n = Integer.highestOneBit(ref) << 1;
                ids = Arrays.copyOf(ids, n);
                bytes = Arrays.copyOf(bytes, n);
            }
            final byte[] cached = bytes[ref];
            if (cached != null && cached.length == length && sameBytes(buf, offset, cached))
            {
                return ids[ref];
            }
            final byte[] copy = new byte[length];
            buf.getBytes(offset, copy);
            bytes[ref] = copy;
            ids[ref] = new String(copy, StandardCharsets.UTF_8);
            return ids[ref];
        }

        private static boolean sameBytes(final ByteBuf buf, final int offset, final byte[] expected)
        {
            for (int i = 0; i < expected.length; i++)
            {
                if (buf.getByte(offset + i) != expected[i])
                {
                    return false;
                }
            }
            return true;
        }
    }
}
