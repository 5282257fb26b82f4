package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/** Read access to a validated, trimmed descriptor held in a buffer (see {@link AcquireDecoder}). */
public interface DescriptorView
{
    ByteBuf buffer();

    int offset(DescriptorField field);

    /** Trimmed length; for ROUTE the length of the path without query or fragment. */
    int length(DescriptorField field);

    /**
     * Whether it is a descriptor of Envoy's rate limit service, which only envoy selectors decide
     * ({@link AcquireCodec#ENVOY_FLAG}); never set by any field's value.
     */
    boolean envoy();
}
