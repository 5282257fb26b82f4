package dev.limiter.server.cluster;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ProtocolGeneration;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLContext;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Before a member joins its cluster's Raft groups, it greets every other member's data port with
 * HELLO and reads the {@link ProtocolGeneration} each answers. A member whose generation this build
 * cannot run beside (or which cannot run beside this build) stops the start, naming the member and
 * both generations: during a rolling upgrade an incompatible build is refused before it writes or
 * reads a log entry. A compatible member of another generation is logged as a warning (an upgrade
 * under way). A member that does not answer within the timeout is down or not started yet, and is
 * not waited for.
 */
public final class PeerGenerations
{
    private static final Logger LOG = LoggerFactory.getLogger(PeerGenerations.class);
    /** The largest answer read: a HELLO_RESULT or an ERROR, both far smaller. */
    private static final int MAX_ANSWER_BYTES = 2048;

    /** Thrown when a member runs a generation this build cannot run beside. */
    public static final class Incompatible extends RuntimeException
    {
        Incompatible(final String message)
        {
            super(message);
        }
    }

    /** What one member said of its generations. */
    public record Answer(String member, InetSocketAddress address, int generation, int oldestPeer)
    {
    }

    private PeerGenerations()
    {
    }

    /**
     * Greets every member but {@code self} and refuses the start when one is incompatible.
     *
     * @param tls       the context of the data ports' TLS, or null when they speak plain TCP
     * @param timeoutMs how long one member has to answer (connect and reply)
     * @return the members that answered, with their generations
     * @throws Incompatible naming every member this build cannot run beside
     */
    public static List<Answer> check(final Map<String, InetSocketAddress> members, final String self,
        final SSLContext tls, final int timeoutMs)
    {
        final List<Answer> answers = new ArrayList<>();
        final List<String> refusals = new ArrayList<>();
        members.forEach((id, address) ->
        {
            if (id.equals(self))
            {
                return;
            }
            final Answer answer;
            try
            {
                answer = greet(id, address, tls, timeoutMs);
            }
            catch (final IOException e)
            {
                LOG.debug("member {} at {} did not answer HELLO ({}): its generation is checked when it starts", id,
                    address, e.toString());
                return;
            }
            answers.add(answer);
            final String why = ProtocolGeneration.incompatibility(answer.generation(), answer.oldestPeer());
            if (why != null)
            {
                refusals.add("member " + id + " at " + hostPort(address) + ": " + why);
            }
            else if (answer.generation() != ProtocolGeneration.CURRENT)
            {
                LOG.warn("member {} at {} runs protocol generation {}, this build generation {}: the two run " +
                    "together " +
                    "(a rolling upgrade); upgrade every member to one build", id, hostPort(address),
                    answer.generation(),
                    ProtocolGeneration.CURRENT);
            }
        });
        if (!refusals.isEmpty())
        {
            throw new Incompatible("this build (protocol generation " + ProtocolGeneration.CURRENT + ", runs beside " +
                ProtocolGeneration.OLDEST_PEER + " and newer) cannot join its cluster: " + String.join("; ", refusals) +
                ". Nothing was started; see docs/production.md#upgrades");
        }
        return answers;
    }

    private static Answer greet(final String id, final InetSocketAddress address, final SSLContext tls,
        final int timeoutMs) throws IOException
    {
        try (Socket socket = tls == null ? new Socket() : tls.getSocketFactory().createSocket())
        {
            // Peers are given as names (a StatefulSet's stable DNS names): resolved now, at each start.
            socket.connect(address.isUnresolved() ? new InetSocketAddress(address.getHostString(),
                address.getPort()) : address, timeoutMs);
            socket.setSoTimeout(timeoutMs);
            final ByteBuf hello = Unpooled.buffer(Frame.HEADER_LENGTH + HelloCodec.BODY_LENGTH);
            HelloCodec.writeHello(hello, 1, Features.NODE);
            final OutputStream out = socket.getOutputStream();
            out.write(hello.array(), hello.arrayOffset() + hello.readerIndex(), hello.readableBytes());
            out.flush();
            final ByteBuf answer = readFrame(socket.getInputStream());
            final int type = Frame.type(answer);
            if (type == MessageType.HELLO_RESULT)
            {
                final HelloCodec.Greeting greeting = readGreeting(answer, address);
                return new Answer(id, address, greeting.generation(), greeting.oldestPeer());
            }
            final int body = Frame.bodyOffset(answer);
            if (type == MessageType.ERROR && ErrorCodec.code(answer, body) == ErrorCode.UNKNOWN_TYPE.code())
            {
                // A node from before HELLO: older than generations too.
                return new Answer(id, address, ProtocolGeneration.BEFORE_GENERATIONS,
                    ProtocolGeneration.BEFORE_GENERATIONS);
            }
            throw new IOException("answered HELLO with " + MessageType.name(type) +
                (type == MessageType.ERROR ? ": " + ErrorCodec.message(answer, body, Frame.frameEnd(answer)) : ""));
        }
    }

    private static HelloCodec.Greeting readGreeting(final ByteBuf answer,
        final InetSocketAddress address) throws IOException
    {
        try
        {
            return HelloCodec.readGreeting(answer);
        }
        catch (final IllegalArgumentException e)
        {
            throw new IOException(hostPort(address) + " sent a malformed HELLO_RESULT: " + e.getMessage(), e);
        }
    }

    private static ByteBuf readFrame(final InputStream in) throws IOException
    {
        final DataInputStream data = new DataInputStream(in);
        final int length = data.readInt();
        if (length < Frame.MIN_LENGTH_FIELD || length > MAX_ANSWER_BYTES)
        {
            throw new IOException("answered HELLO with a frame of length field " + length);
        }
        final byte[] frame = new byte[Frame.LENGTH_FIELD_LENGTH + length];
        frame[0] = (byte)(length >>> 24);
        frame[1] = (byte)(length >>> 16);
        frame[2] = (byte)(length >>> 8);
        frame[3] = (byte)length;
        data.readFully(frame, Frame.LENGTH_FIELD_LENGTH, length);
        return Unpooled.wrappedBuffer(frame);
    }

    private static String hostPort(final InetSocketAddress address)
    {
        return address.getHostString() + ":" + address.getPort();
    }
}
