package dev.limiter.client;

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

import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which of a client's connections a call goes on (real connections to stand-in nodes on loopback). */
@Timeout(30)
class ConnectionSetTest
{
    private static final int PER_NODE = 3;

    @Test
    void callsSetOffByAnAnswerGoBackOnItsConnectionOrOnItsPartnerAtTheNodeThatLeadsTheirShard() throws Exception
    {
        final IoEventLoopGroup loops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        final List<Connection> all = new ArrayList<>();
        try (ScriptedNode a = new ScriptedNode(request -> null, PER_NODE);
             ScriptedNode b = new ScriptedNode(request -> null, PER_NODE))
        {
            final Connection[] toA = connections(a, loops, all);
            final Connection[] toB = connections(b, loops, all);
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
                        assertSame(toB[slot], set.open(b.endpoint()), "a call to another node goes on the partner there");
                    }
                }

                toB[1].close();
                Connection.followOnCallsTo(toA[1]);
                for (int call = 0; call < 20; call++)
                {
                    final Connection taken = set.open(b.endpoint());
                    assertNotSame(toB[1], taken, "never a closed partner");
                    assertTrue(taken == toB[0] || taken == toB[2], "another open connection of that node");
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

    private static Connection[] connections(final ScriptedNode node, final IoEventLoopGroup loops, final List<Connection> all)
    {
        final String[] hostPort = node.endpoint().split(":");
        final Connection[] connections = new Connection[PER_NODE];
        for (int i = 0; i < PER_NODE; i++)
        {
            connections[i] = new Connection(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), loops.next(),
                LimiterClient.DEFAULT_MAX_BATCH, 1 << 20, 5_000, NioSocketChannel.class, null, null, TimeUnit.SECONDS.toNanos(30),
                "connection-set-test", null, TimeUnit.SECONDS.toNanos(30), map -> { }, descriptor -> { });
            all.add(connections[i]);
        }
        return connections;
    }
}
