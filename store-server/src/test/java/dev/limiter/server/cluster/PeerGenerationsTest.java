package dev.limiter.server.cluster;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ProtocolGeneration;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A member greets the others before it joins: stand-ins play other builds' data ports (a newer
 * build that reads only newer generations, a build from before generations, one from before HELLO),
 * each answering one HELLO as that build does.
 */
class PeerGenerationsTest
{
    /** A data port of another build: answers each HELLO with what {@code answer} writes. */
    private static final class OtherBuild implements AutoCloseable
    {
        final ServerSocket socket;
        final Thread thread;

        OtherBuild(final Consumer<ByteBuf> answer) throws IOException
        {
            socket = new ServerSocket(0, 10, InetAddress.getLoopbackAddress());
            thread = new Thread(() ->
            {
                while (!socket.isClosed())
                {
                    try (Socket peer = socket.accept())
                    {
                        final DataInputStream in = new DataInputStream(peer.getInputStream());
                        final byte[] hello = new byte[in.readInt()];
                        in.readFully(hello);
                        final ByteBuf out = Unpooled.buffer();
                        answer.accept(out);
                        peer.getOutputStream().write(out.array(), 0, out.writerIndex());
                    }
                    catch (final IOException closed)
                    {
                        return;
                    }
                }
            }, "other-build");
            thread.setDaemon(true);
            thread.start();
        }

        InetSocketAddress address()
        {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), socket.getLocalPort());
        }

        @Override
        public void close() throws Exception
        {
            socket.close();
            thread.join(2000);
        }
    }

    private static Consumer<ByteBuf> generations(final int generation, final int oldestPeer)
    {
        return out ->
        {
            final int start = Frame.begin(out, MessageType.HELLO_RESULT, 1);
            out.writeLong(Features.NODE).writeInt(generation).writeInt(oldestPeer);
            Frame.finish(out, start);
        };
    }

    private static final Consumer<ByteBuf> FEATURES_ONLY = out ->
    {
        final int start = Frame.begin(out, MessageType.HELLO_RESULT, 1);
        out.writeLong(Features.SHARD_MAP);
        Frame.finish(out, start);
    };

    private static final Consumer<ByteBuf> BEFORE_HELLO = out ->
        ErrorCodec.encode(out, 1, ErrorCode.UNKNOWN_TYPE, "unknown message type 20");

    private static int freePort() throws IOException
    {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return s.getLocalPort();
        }
    }

    @Test
    void olderCompatibleBuildsAndMembersThatAreDownLetTheMemberStartAndEachAnswerIsRead() throws Exception
    {
        try (OtherBuild same = new OtherBuild(generations(ProtocolGeneration.CURRENT, ProtocolGeneration.OLDEST_PEER));
             OtherBuild beforeGenerations = new OtherBuild(FEATURES_ONLY);
             OtherBuild beforeHello = new OtherBuild(BEFORE_HELLO))
        {
            final Map<String, InetSocketAddress> members = new LinkedHashMap<>();
            members.put("n1", new InetSocketAddress(InetAddress.getLoopbackAddress(),
                freePort())); // itself: not greeted
            members.put("n2", same.address());
            members.put("n3", beforeGenerations.address());
            members.put("n4", beforeHello.address());
            members.put("n5", new InetSocketAddress(InetAddress.getLoopbackAddress(), freePort())); // down
            final long started = System.nanoTime();
            final List<PeerGenerations.Answer> answers = PeerGenerations.check(members, "n1", null, 500);
            assertEquals(List.of(
                new PeerGenerations.Answer("n2", same.address(), ProtocolGeneration.CURRENT,
                    ProtocolGeneration.OLDEST_PEER),
                new PeerGenerations.Answer("n3", beforeGenerations.address(), 1, 1),
                new PeerGenerations.Answer("n4", beforeHello.address(), 1, 1)), answers);
            assertEquals(true, System.nanoTime() - started < 2_000_000_000L, "a refused connection is not waited on");
        }
    }

    @Test
    void aBuildThatReadsOnlyNewerGenerationsStopsTheStartNamingTheMemberAndBothGenerations() throws Exception
    {
        try (OtherBuild newer = new OtherBuild(generations(99, 98));
             OtherBuild same = new OtherBuild(generations(ProtocolGeneration.CURRENT, ProtocolGeneration.OLDEST_PEER)))
        {
            final Map<String, InetSocketAddress> members = new LinkedHashMap<>();
            members.put("n1", same.address());
            members.put("n2", newer.address());
            members.put("n3", new InetSocketAddress(InetAddress.getLoopbackAddress(), freePort()));
            final PeerGenerations.Incompatible refused = assertThrows(PeerGenerations.Incompatible.class,
                () -> PeerGenerations.check(members, "n3", null, 500));
            final String host = newer.address().getHostString() + ":" + newer.address().getPort();
            assertEquals("this build (protocol generation " + ProtocolGeneration.CURRENT + ", runs beside " +
                ProtocolGeneration.OLDEST_PEER + " and newer) cannot join its cluster: member n2 at " + host +
                ": it reads protocol generation 98 or newer and this build speaks generation "
                    + ProtocolGeneration.CURRENT +
                ": this build is too old to join it; run a build of generation 98 or newer. Nothing was started; " +
                "see docs/production.md#upgrades", refused.getMessage());
        }
    }
}
