package dev.limiter.client;

import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which of a client's connections a call goes on (real connections to stand-in nodes on loopback). */
@Timeout(30)
class ConnectionSetTest
{
    private static final int PER_NODE = 3;

    @Test
    void callsSetOffByAnAnswerGoBackOnItsConnectionOrToTheFirstConnectionOnItsThreadAtTheNodeThatLeadsTheirShard() throws Exception
    {
        final IoEventLoopGroup loops = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        final EventLoop first = loops.next();
        final EventLoop second = loops.next();
        final List<Connection> all = new ArrayList<>();
        try (ScriptedNode a = new ScriptedNode(request -> null, PER_NODE);
             ScriptedNode b = new ScriptedNode(request -> null, PER_NODE))
        {
            final Connection[] toA = connections(a, new EventLoop[] {first, second, first}, all);
            final Connection[] toB = connections(b, new EventLoop[] {second, first, second}, all);
            // The connection on the same I/O thread at the other node, for each of toA's.
            final Connection[] partners = {toB[1], toB[0], toB[1]};
            final ConnectionSet set = new ConnectionSet(all);
            all.forEach(connection -> connection.connect(NO_EVENTS, () -> { }));
            Await.until("every connection open", Duration.ofSeconds(10), () -> set.open() == all.size());
            // As in the callbacks of an answer that came on toA[slot]: on its I/O thread, with it answering.
            for (int slot = 0; slot < PER_NODE; slot++)
            {
                final Connection answering = toA[slot];
                final Connection partner = partners[slot];
                asAnswer(answering, () ->
                {
                    for (int call = 0; call < 20; call++)
                    {
                        assertSame(answering, set.open(a.endpoint()),
                            "a call to the answering node goes back on that connection");
                        assertSame(partner, set.open(b.endpoint()),
                            "a call to another node goes on its first connection on this I/O thread");
                    }
                });
            }
            assertTrue(set.open(b.endpoint()) != null, "outside a callback: any open connection of the node");

            toB[0].close(); // the next one on that thread takes over
            awaitClosed(toB[0]);
            asAnswer(toA[1], () ->
            {
                for (int call = 0; call < 20; call++)
                {
                    assertSame(toB[2], set.open(b.endpoint()), "the next open connection on that thread");
                }
            });

            toB[1].close(); // none left on the first thread: any open one of the node
            awaitClosed(toB[1]);
            asAnswer(toA[0], () ->
            {
                for (int call = 0; call < 20; call++)
                {
                    assertSame(toB[2], set.open(b.endpoint()), "the only open connection of that node");
                }
            });
        }
        finally
        {
            all.forEach(Connection::close);
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** Runs {@code check} on {@code answering}'s I/O thread as a callback of one of its answers would. */
    private static void asAnswer(final Connection answering, final Runnable check) throws Exception
    {
        try
        {
            answering.loop().submit(() ->
            {
                Connection.followOnCallsTo(answering);
                try
                {
                    check.run();
                }
                finally
                {
                    Connection.followOnCallsTo(null);
                }
            }).get(10, TimeUnit.SECONDS);
        }
        catch (final ExecutionException e)
        {
            if (e.getCause() instanceof AssertionError failed)
            {
                throw failed; // the check's own message
            }
            throw e;
        }
    }

    private static void awaitClosed(final Connection connection)
    {
        Await.until("the connection closed", Duration.ofSeconds(10), () -> !connection.isActive());
    }

    private static final ConnectionSettings SETTINGS = new ConnectionSettings(NioSocketChannel.class, null, 5_000,
        TimeUnit.SECONDS.toNanos(30), LimiterClient.DEFAULT_MAX_BATCH, 1 << 20, 0,
            ConnectionSettings.utf8("connection-set-test"));
    private static final Connection.Events NO_EVENTS = new Connection.Events(null, map -> { }, descriptor -> { });

    private static Connection[] connections(final ScriptedNode node, final EventLoop[] loops,
        final List<Connection> all)
    {
        final String[] hostPort = node.endpoint().split(":");
        final Connection[] connections = new Connection[PER_NODE];
        for (int i = 0; i < PER_NODE; i++)
        {
            connections[i] = new Connection(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), loops[i],
                SETTINGS, Backoff.DEFAULT, null);
            all.add(connections[i]);
        }
        return connections;
    }
}
