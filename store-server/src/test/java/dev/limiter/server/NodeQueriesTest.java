package dev.limiter.server;

import dev.limiter.protocol.status.StatusReport;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.RejectedDecisions;
import dev.limiter.server.metrics.ServerMetrics;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a single node says of itself before it serves, while it serves and once it stops: no shards, one port. */
class NodeQueriesTest
{
    private final NodeConfig config = new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).build();
    private final ServerMetrics metrics = new ServerMetrics();
    private final PolicyState policies = new PolicyState();
    private final DataPort port = new DataPort(config.dataPort(), metrics, null);
    private final AtomicBoolean closed = new AtomicBoolean();
    private final NodeQueries node = new NodeQueries(config, port, "nio", List.of(), policies, metrics,
        new RejectedDecisions(), new NodeQueries.Started(() -> null, () -> null, () -> null, closed::get));

    @Test
    void aNodeNotYetServingIsNotReadyNamingEveryReason()
    {
        assertFalse(node.healthy());
        assertEquals(List.of("the data port is not serving", "the policy set is not loaded yet"),
            node.readiness().notReady());
        final StatusReport status = node.status();
        assertEquals("127.0.0.1:0", status.getAddress(), "the configured port until one is bound");
        assertEquals("LEADER", status.getRole());
        assertEquals("single", status.getMembers(0).getId());
        assertNull(node.historyJson(0), "no history before it starts");
        assertEquals(404, node.regionReport("Bearer x").status(), "a node of no region");
        assertEquals(0, node.hotKeys().getShardsCount());
        assertEquals(0, node.bucketCount());
    }

    @Test
    void aServingNodeIsReadyOnceItsPoliciesAreLoadedAndDownOnceItCloses() throws Exception
    {
        final EventLoopGroup loops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try
        {
            port.bind(loops, loops, NioServerSocketChannel.class, ChannelInboundHandlerAdapter::new);
            assertTrue(node.healthy());
            assertEquals(List.of("the policy set is not loaded yet"), node.readiness().notReady());
            policies.apply(PolicySeed.read(config.storage(), 1).command("single"));
            assertTrue(node.readiness().ready(), node.readiness().json());
            assertEquals("127.0.0.1:" + port.port(), node.status().getAddress());
            assertEquals("{\"status\":\"UP\",\"port\":" + port.port() + ",\"shards\":0,\"buckets\":0,\"policies\":1," +
                "\"policySetVersion\":1,\"transport\":\"nio\"}", node.healthJson());
            closed.set(true);
            assertFalse(node.healthy(), "a closing node is down while its port still listens");
            assertTrue(node.healthJson().startsWith("{\"status\":\"DOWN\""), node.healthJson());
            assertEquals(List.of("the data port is not serving"), node.readiness().notReady());
            port.stopListening();
            assertFalse(port.listening());
        }
        finally
        {
            port.stopListening();
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
