package dev.limiter.client;

import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
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
            all.forEach(connection -> connection.connect(() -> { }));
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (set.open() < all.size())
            {
                assertTrue(System.nanoTime() < deadline, "connected: " + set.open() + " of " + all.size());
                Thread.sleep(10);
            }
            try
            {
                for (int slot = 0; slot < PER_NODE; slot++)
                {
                    Connection.followOnCallsTo(toA[slot]); // as in the callbacks of an answer that came on toA[slot]
                    for (int call = 0; call < 20; call++)
                    {
                        assertSame(toA[slot], set.open(a.endpoint()), "a call to the answering node goes back on that connection");
                        assertSame(partners[slot], set.open(b.endpoint()),
                            "a call to another node goes on its first connection on the same I/O thread");
                    }
                }

                toB[0].close(); // the next one on that thread takes over
                Connection.followOnCallsTo(toA[1]);
                final long closing = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (toB[0].isActive())
                {
                    assertTrue(System.nanoTime() < closing, "closed");
                    Thread.sleep(10);
                }
                for (int call = 0; call < 20; call++)
                {
                    assertSame(toB[2], set.open(b.endpoint()), "the next open connection on that thread");
                }

                toB[1].close(); // none left on that thread: any open one of the node
                Connection.followOnCallsTo(toA[0]);
                while (toB[1].isActive())
                {
                    assertTrue(System.nanoTime() < closing, "closed");
                    Thread.sleep(10);
                }
                for (int call = 0; call < 20; call++)
                {
                    assertSame(toB[2], set.open(b.endpoint()), "the only open connection of that node");
                }
            }
            finally
            {
                Connection.followOnCallsTo(null);
            }
        }
        finally
        {
            all.forEach(Connection::close);
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private static Connection[] connections(final ScriptedNode node, final EventLoop[] loops, final List<Connection> all)
    {
        final String[] hostPort = node.endpoint().split(":");
        final Connection[] connections = new Connection[PER_NODE];
        for (int i = 0; i < PER_NODE; i++)
        {
            connections[i] = new Connection(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), loops[i],
                LimiterClient.DEFAULT_MAX_BATCH, 1 << 20, 5_000, NioSocketChannel.class, null, null, TimeUnit.SECONDS.toNanos(30),
                "connection-set-test", null, TimeUnit.SECONDS.toNanos(30), map -> { }, descriptor -> { });
            all.add(connections[i]);
        }
        return connections;
    }
}
