package dev.limiter.server.testing;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/** A raw TCP connection to a node's data port, speaking (or not) the frame format: for tests of bad input. */
public final class RawConnection implements AutoCloseable
{
    /** One frame read back. */
    public record Answer(int type, long correlationId, byte[] body)
    {
        public ErrorCode errorCode()
        {
            return type == MessageType.ERROR ? ErrorCode.ofOrNull(ByteBuffer.wrap(body).getShort() & 0xFFFF) : null;
        }

        public String errorMessage()
        {
            final ByteBuffer b = ByteBuffer.wrap(body);
            b.getShort();
            final byte[] message = new byte[b.getShort() & 0xFFFF];
            b.get(message);
            return new String(message, StandardCharsets.UTF_8);
        }

        public boolean isError()
        {
            return type == MessageType.ERROR;
        }

        /** The body as text (a STATUS answer's JSON). */
        public String text()
        {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** The body of a one-entry ACQUIRE batch holding {@code encodedFields} (see {@code AcquireCodec.encodeFields}). */
    public static byte[] acquireBody(final byte[] encodedFields)
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            final int start = AcquireCodec.beginBatch(buf, MessageType.ACQUIRE, 0);
            AcquireCodec.appendEntry(buf, 1, encodedFields);
            AcquireCodec.finishBatch(buf, start, 1);
            final byte[] body = new byte[buf.writerIndex() - Frame.HEADER_LENGTH];
            buf.getBytes(Frame.HEADER_LENGTH, body);
            return body;
        }
        finally
        {
            buf.release();
        }
    }

    /** One request on a connection of its own, its answer read back (STATUS and the like); 5 s to answer. */
    public static Answer exchange(final int port, final int type, final byte[] body) throws IOException
    {
        return exchange(port, type, body, 5000);
    }

    /** As {@link #exchange(int, int, byte[])}, waiting at most {@code timeoutMillis} for the answer. */
    static Answer exchange(final int port, final int type, final byte[] body,
        final int timeoutMillis) throws IOException
    {
        try (RawConnection raw = new RawConnection(port))
        {
            raw.socket.setSoTimeout(timeoutMillis);
            return raw.request(type, 1, body);
        }
    }

    private final Socket socket;
    private final OutputStream out;
    private final DataInputStream in;

    public RawConnection(final int port) throws IOException
    {
        this("127.0.0.1", port);
    }

    /** To a node at another address (one on a link a test made, say). */
    public RawConnection(final String host, final int port) throws IOException
    {
        socket = new Socket(host, port);
        socket.setSoTimeout(5000);
        out = socket.getOutputStream();
        in = new DataInputStream(socket.getInputStream());
    }

    public static byte[] frame(final int type, final long correlationId, final byte[] body)
    {
        final ByteBuffer b = ByteBuffer.allocate(Frame.HEADER_LENGTH + body.length);
        b.putInt(Frame.MIN_LENGTH_FIELD + body.length).put((byte)Frame.VERSION).put((byte)type).putShort((short)0)
            .putLong(correlationId).put(body);
        return b.array();
    }

    public void send(final byte[] bytes) throws IOException
    {
        out.write(bytes);
        out.flush();
    }

    /** Sends one frame and reads the next frame back. */
    public Answer request(final int type, final long correlationId, final byte[] body) throws IOException
    {
        send(frame(type, correlationId, body));
        return read();
    }

    /** Reads one frame; null when the node closed the connection. */
    public Answer read() throws IOException
    {
        final int length;
        try
        {
            length = in.readInt();
        }
        catch (final EOFException | SocketException e)
        {
            return null;
        }
        final byte[] rest = new byte[length];
        in.readFully(rest);
        final ByteBuffer b = ByteBuffer.wrap(rest);
        b.get(); // version
        final int type = b.get() & 0xFF;
        b.getShort();
        final long correlationId = b.getLong();
        final byte[] body = new byte[b.remaining()];
        b.get(body);
        return new Answer(type, correlationId, body);
    }

    /** Whether the node closed the connection (reads until end of stream or the timeout). */
    public boolean closedByPeer() throws IOException
    {
        try
        {
            while (true)
            {
                if (in.read() == -1)
                {
                    return true;
                }
            }
        }
        catch (final java.net.SocketTimeoutException e)
        {
            return false;
        }
        catch (final SocketException e)
        {
            return true;
        }
    }

    public void timeout(final int millis) throws SocketException
    {
        socket.setSoTimeout(millis);
    }

    @Override
    public void close() throws IOException
    {
        socket.close();
    }
}
