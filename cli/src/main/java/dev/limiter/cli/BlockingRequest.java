package dev.limiter.cli;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HostPort;
import dev.limiter.protocol.MessageType;
import io.netty.buffer.Unpooled;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/**
 * One request frame and its answer over a short-lived blocking socket: for operator tools (STATUS,
 * MEMBERS) and tests, not for the decision path (that is the SDK's).
 */
public final class BlockingRequest
{
    private BlockingRequest()
    {
    }

    /** An answer frame: its type and body. */
    public record Answer(int type, byte[] body)
    {
        /** The body as UTF-8 text (STATUS_RESULT, MEMBERS_RESULT). */
        public String text()
        {
            return new String(body, StandardCharsets.UTF_8);
        }

        public boolean isError()
        {
            return type == MessageType.ERROR;
        }

        /** The error code of an ERROR answer, or null. */
        public ErrorCode errorCode()
        {
            return isError() && body.length >= 2 ? ErrorCode.ofOrNull(((body[0] & 0xFF) << 8) | (body[1] & 0xFF)) : null;
        }

        /** The message of an ERROR answer, or null. */
        public String errorMessage()
        {
            return isError() ? ErrorCodec.message(Unpooled.wrappedBuffer(body), 0, body.length) : null;
        }
    }

    /**
     * Connects to {@code host:port}, sends one frame and reads one answer.
     *
     * @throws IOException when the node cannot be reached or closes without answering
     * @throws IllegalArgumentException when {@code hostPort} is not host:port
     */
    public static Answer send(final String hostPort, final int type, final byte[] body, final int timeoutMillis) throws IOException
    {
        return send(hostPort, type, body, timeoutMillis, null);
    }

    /**
     * As {@link #send(String, int, byte[], int)}, over TLS when {@code tls} is not null (the node's
     * certificate must name the host it is reached by).
     */
    public static Answer send(final String hostPort, final int type, final byte[] body, final int timeoutMillis,
        final SSLContext tls) throws IOException
    {
        final InetSocketAddress address = HostPort.parse(hostPort, "server");
        final String host = address.getHostString();
        final int port = address.getPort();
        try (Socket plain = new Socket())
        {
            plain.connect(new InetSocketAddress(host, port), timeoutMillis);
            return exchange(tls == null ? plain : tls.getSocketFactory().createSocket(plain, host, port, true), hostPort, type, body,
                timeoutMillis);
        }
    }

    private static Answer exchange(final Socket socket, final String hostPort, final int type, final byte[] body,
        final int timeoutMillis) throws IOException
    {
        try (socket)
        {
            socket.setSoTimeout(timeoutMillis);
            if (socket instanceof SSLSocket secure)
            {
                final SSLParameters parameters = secure.getSSLParameters();
                parameters.setEndpointIdentificationAlgorithm("HTTPS");
                secure.setSSLParameters(parameters);
            }
            socket.getOutputStream().write(ByteBuffer.allocate(Frame.HEADER_LENGTH + body.length)
                .putInt(Frame.MIN_LENGTH_FIELD + body.length).put((byte)Frame.VERSION).put((byte)type).putShort((short)0)
                .putLong(1).put(body).array());
            final DataInputStream in = new DataInputStream(socket.getInputStream());
            final int length = in.readInt();
            if (length < Frame.MIN_LENGTH_FIELD || length > Frame.DEFAULT_MAX_FRAME_BYTES)
            {
                throw new IOException("answer from " + hostPort + " has an impossible length " + length);
            }
            final byte[] rest = new byte[length];
            in.readFully(rest);
            final byte[] answerBody = new byte[length - Frame.MIN_LENGTH_FIELD];
            System.arraycopy(rest, Frame.MIN_LENGTH_FIELD, answerBody, 0, answerBody.length);
            return new Answer(rest[Frame.TYPE_OFFSET - Frame.LENGTH_FIELD_LENGTH] & 0xFF, answerBody);
        }
    }
}
