package dev.limiter.server.net;

import dev.limiter.protocol.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * Splits the byte stream into frames (see {@link Frame}): emits nothing until a whole frame has
 * arrived, emits a retained slice (no copy), fails fast on a frame above the maximum size
 * ({@code TooLongFrameException}), on a negative length ({@code CorruptedFrameException}) and on a
 * connection that opens with another protocol ({@link ForeignProtocolException}), and tells the
 * connection's {@link ConnectionGuard} when a frame is pending.
 */
public final class FrameDecoder extends LengthFieldBasedFrameDecoder
{
    private static final Set<String> HTTP_STARTS = Set.of("GET ", "HEAD", "POST", "PUT ", "DELE", "OPTI", "PATC", "CONN", "TRAC",
        "PRI "); // the last: HTTP/2's preface (gRPC)
    private static final byte TLS_HANDSHAKE_RECORD = 0x16;
    private static final byte TLS_MAJOR_VERSION = 0x03;

    /** Told when a frame begins and ends, so that a frame left unfinished closes the connection; may be null. */
    private final ConnectionGuard guard;
    private final int maxFrameBytes;
    private boolean firstBytesChecked;
    /** Another protocol was seen: the connection is closing and nothing more is decoded. */
    private boolean foreign;

    public FrameDecoder(final int maxFrameBytes, final ConnectionGuard guard)
    {
        super(maxFrameBytes, 0, Frame.LENGTH_FIELD_LENGTH, 0, 0, true);
        this.guard = guard;
        this.maxFrameBytes = maxFrameBytes;
    }

    @Override
    protected Object decode(final ChannelHandlerContext ctx, final ByteBuf in) throws Exception
    {
        if (foreign)
        {
            in.skipBytes(in.readableBytes()); // closing: nothing more is read as frames
            return null;
        }
        if (!firstBytesChecked && in.readableBytes() >= Frame.LENGTH_FIELD_LENGTH)
        {
            firstBytesChecked = true;
            checkFirstBytes(in);
        }
        final Object frame = super.decode(ctx, in);
        if (guard != null)
        {
            if (frame != null)
            {
                guard.messageFinished();
            }
            if (in.isReadable())
            {
                guard.messageStarted(System.nanoTime());
            }
        }
        return frame;
    }

    /**
     * A connection's first four bytes are a frame's length, at most 64 MiB: "GET ", "POST" or a TLS
     * record's header read as one is far larger, so taking them for another protocol is never wrong.
     */
    private void checkFirstBytes(final ByteBuf in)
    {
        final int at = in.readerIndex();
        if (in.getInt(at) <= maxFrameBytes)
        {
            return;
        }
        final String start = in.toString(at, Frame.LENGTH_FIELD_LENGTH, StandardCharsets.ISO_8859_1);
        if (HTTP_STARTS.contains(start))
        {
            foreign = true;
            throw new ForeignProtocolException(true, "this is a limiter data port, which speaks its binary protocol " +
                "(docs/protocol.md), not HTTP: /metrics, /health, /status and the /v1 admin API are on the node's admin port " +
                "(--admin-port, default 7480; ./limiter cluster uses 7481-7483)");
        }
        if (in.getByte(at) == TLS_HANDSHAKE_RECORD && in.getByte(at + 1) == TLS_MAJOR_VERSION)
        {
            foreign = true;
            throw new ForeignProtocolException(false, "a TLS handshake on a data port that serves no TLS: connect without TLS, " +
                "or start the node with --tls-cert and --tls-key");
        }
    }

    @Override
    protected long getUnadjustedFrameLength(final ByteBuf buf, final int offset, final int length, final ByteOrder order)
    {
        // The length field is a signed int: a negative value is corruption, not a 4 GiB frame.
        return buf.getInt(offset);
    }
}
