package dev.limiter.client;

import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A stand-in node on loopback for SDK tests: it accepts one connection (or as many as it was made
 * for), reads their frames and writes back whatever the script answers (nothing when it answers null).
 */
final class ScriptedNode implements AutoCloseable
{
    /**
     * One request: its type, correlation id, the frame without its length field, and which of the
     * accepted connections it came on (0 for the first).
     */
    record Request(int type, long correlationId, ByteBuffer frame, int connection)
    {
        /** Bytes of the body. */
        int bodyLength()
        {
            return frame.capacity() - (Frame.HEADER_LENGTH - Frame.LENGTH_FIELD_LENGTH);
        }
    }

    @FunctionalInterface
    interface Script
    {
        /** @return the answer frame(s) to write, or null for none */
        ByteBuf answer(Request request);
    }

    private final ServerSocket listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());

    ScriptedNode(final Script script) throws IOException
    {
        this(script, 1);
    }

    /** A node that accepts up to {@code connections} connections, each served on a thread of its own. */
    ScriptedNode(final Script script, final int connections) throws IOException
    {
        final Thread thread = new Thread(() ->
        {
            for (int i = 0; i < connections; i++)
            {
                final Socket socket;
                try
                {
                    socket = listener.accept();
                }
                catch (final IOException closed)
                {
                    return;
                }
                final int connection = i;
                final Thread served = new Thread(() -> serve(socket, connection, script), "scripted-node-" + i);
                served.setDaemon(true);
                served.start();
            }
        }, "scripted-node");
        thread.setDaemon(true);
        thread.start();
    }

    /** A POLICIES_RESULT carrying {@code set} (a serialized PolicySet) as fleet size 7. */
    static ByteBuf policies(final byte[] set)
    {
        final ByteBuf answer = Unpooled.buffer();
        final int start = Frame.begin(answer, MessageType.POLICIES_RESULT, 0);
        answer.writeLong(7).writeBytes(set);
        Frame.finish(answer, start);
        return answer;
    }

    /** The answer to a PING. */
    static ByteBuf pong(final Request request)
    {
        final ByteBuf answer = Unpooled.buffer();
        Frame.finish(answer, Frame.begin(answer, MessageType.PONG, request.correlationId()));
        return answer;
    }

    /** Entries in an ACQUIRE or BATCH_ACQUIRE frame. */
    static int entries(final Request request)
    {
        return request.frame().getShort(Frame.HEADER_LENGTH - Frame.LENGTH_FIELD_LENGTH) & 0xFFFF;
    }

    /** The answer to an ACQUIRE or BATCH_ACQUIRE that allows every entry under policy 1, "baseline". */
    static ByteBuf allowAll(final Request request)
    {
        final ByteBuf answer = Unpooled.buffer();
        final int count = entries(request);
        final int start = ResultCodec.beginBatch(answer, request.type() == MessageType.ACQUIRE ? MessageType.RESULT :
            MessageType.BATCH_RESULT, request.correlationId(), count);
        for (int i = 0; i < count; i++)
        {
            ResultCodec.putRecord(answer, ResultCodec.recordOffset(start, i), true, ReasonCode.ALLOWED, 1, 99, 100, 0, 0, 1, 1);
        }
        ResultCodec.beginPolicies(answer, 1);
        ResultCodec.appendPolicy(answer, 1, "baseline".getBytes(StandardCharsets.UTF_8));
        Frame.finish(answer, start);
        return answer;
    }

    String endpoint()
    {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    private static void serve(final Socket accepted, final int connection, final Script script)
    {
        try (Socket socket = accepted)
        {
            final DataInputStream in = new DataInputStream(socket.getInputStream());
            final OutputStream out = socket.getOutputStream();
            while (true)
            {
                final byte[] rest = new byte[in.readInt()];
                in.readFully(rest);
                final ByteBuffer frame = ByteBuffer.wrap(rest);
                final int type = rest[Frame.TYPE_OFFSET - Frame.LENGTH_FIELD_LENGTH] & 0xFF;
                final long correlationId = frame.getLong(Frame.CORRELATION_ID_OFFSET - Frame.LENGTH_FIELD_LENGTH);
                ByteBuf answer = script.answer(new Request(type, correlationId, frame, connection));
                if (answer == null && type == MessageType.HELLO)
                {
                    answer = Unpooled.buffer(); // as a node of this build, unless the script says otherwise
                    HelloCodec.writeResult(answer, correlationId, Features.NODE);
                }
                if (answer == null)
                {
                    continue;
                }
                final byte[] bytes = new byte[answer.readableBytes()];
                answer.readBytes(bytes);
                out.write(bytes);
                out.flush();
            }
        }
        catch (final IOException ignored)
        {
            // the client closed, or the node was closed
        }
    }

    @Override
    public void close() throws IOException
    {
        listener.close();
    }
}
