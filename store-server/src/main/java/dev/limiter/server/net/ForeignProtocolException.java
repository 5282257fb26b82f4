package dev.limiter.server.net;

import io.netty.handler.codec.CorruptedFrameException;

/**
 * The first bytes on a data-port connection are another protocol's (an HTTP request, a TLS
 * handshake), not a frame's length: a client pointed at the wrong port, or speaking TLS to a node
 * that serves none. Its message says which port or option it wants instead.
 */
public final class ForeignProtocolException extends CorruptedFrameException
{
    private final boolean http;

    ForeignProtocolException(final boolean http, final String message)
    {
        super(message);
        this.http = http;
    }

    /** True for HTTP, which can be answered in HTTP; false for a TLS handshake, which cannot be answered in clear. */
    public boolean http()
    {
        return http;
    }
}
