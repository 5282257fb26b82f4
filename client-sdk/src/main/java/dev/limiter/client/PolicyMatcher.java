package dev.limiter.client;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.AcquireDecoder;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PolicySetIndex;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * Matches a descriptor as a node does: it goes through the same decoder (a frame of one entry)
 * and the same matcher, with scratch kept per thread so a match allocates nothing. Used by the
 * local fallback (what to decide without a node) and by shard routing (where a call goes).
 */
final class PolicyMatcher
{
    /** A thread's scratch: a frame holding one entry and its decoder. */
    private static final class Scratch
    {
        final ByteBuf frame = Unpooled.buffer(Frame.HEADER_LENGTH + AcquireCodec.BATCH_HEADER_LENGTH + 4 + 1024);
        final AcquireDecoder decoder = new AcquireDecoder();
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private PolicyMatcher()
    {
    }

    /**
     * The calling thread's decoder positioned on {@code descriptor}'s entry (valid until this
     * thread's next call here), or null when it does not decode.
     */
    static AcquireDecoder decode(final Descriptor descriptor)
    {
        final Scratch scratch = SCRATCH.get();
        final ByteBuf frame = scratch.frame.clear();
        final int start = AcquireCodec.beginBatch(frame, MessageType.ACQUIRE, 0);
        AcquireCodec.appendEntry(frame, 1, descriptor.encoded());
        AcquireCodec.finishBatch(frame, start, 1);
        final AcquireDecoder decoder = scratch.decoder;
        return decoder.wrap(frame, Frame.HEADER_LENGTH, frame.writerIndex(), true) == null && decoder.next() ? decoder : null;
    }

    /** The policy that decides {@code descriptor} (the rollout version for its tenant); the default when it does not decode. */
    static CompiledPolicy match(final PolicySetIndex index, final Descriptor descriptor)
    {
        final AcquireDecoder decoder = decode(descriptor);
        return decoder == null ? index.defaultPolicy() : index.match(decoder).forRequest(decoder);
    }

    /**
     * Whether {@code descriptor} has no limit at all (an Envoy descriptor no policy selects, or an
     * unlimited policy's: {@link PolicySetIndex#noLimit}); {@code policy} is what {@link #match} gave it.
     */
    static boolean noLimit(final PolicySetIndex index, final CompiledPolicy policy, final Descriptor descriptor)
    {
        return descriptor.envoy() && (policy.unlimited() || policy == index.defaultPolicy());
    }
}
