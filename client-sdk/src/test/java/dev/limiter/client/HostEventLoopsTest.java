package dev.limiter.client;

import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import io.netty.buffer.ByteBuf;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.local.LocalIoHandler;
import io.netty.channel.nio.NioIoHandler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A client on the host's event loops (a gateway's gRPC server and its SDK sharing one thread). */
@Timeout(30)
class HostEventLoopsTest
{
    private final byte[] set = PolicySet.newBuilder().setVersion(1)
        .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setBurst(100).setOwner("infra")).build().toByteArray();

    private ByteBuf answer(final ScriptedNode.Request request)
    {
        if (request.type() == MessageType.POLICIES)
        {
            return ScriptedNode.policies(set);
        }
        return request.type() == MessageType.ACQUIRE || request.type() == MessageType.BATCH_ACQUIRE ? ScriptedNode.allowAll(request) : null;
    }

    @Test
    void aCallMadeOnTheHostsLoopIsAnsweredOnItAndClosingTheClientLeavesTheLoopsToTheHost() throws Exception
    {
        final IoEventLoopGroup loops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (ScriptedNode node = new ScriptedNode(this::answer))
        {
            final LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1).eventLoops(loops).build();
            assertTrue(client.policies().version() != 0, "ready at build (the policy set held), on the host's loops");
            // As a gRPC handler would: the call is made on the loop, and its answer completes there.
            final AtomicReference<Thread> caller = new AtomicReference<>();
            final CompletableFuture<Thread> answeredOn = new CompletableFuture<>();
            loops.next().execute(() ->
            {
                caller.set(Thread.currentThread());
                client.acquire(Descriptor.of("acme", "/orders")).whenComplete((d, e) ->
                {
                    if (e == null && d.allowed() && !d.degraded())
                    {
                        answeredOn.complete(Thread.currentThread());
                    }
                    else
                    {
                        answeredOn.completeExceptionally(e != null ? e : new AssertionError(d.toString()));
                    }
                });
            });
            final Thread answerThread = answeredOn.get(5, TimeUnit.SECONDS);
            assertEquals(caller.get(), answerThread, "answered on the loop the call was made on");
            client.close();
            assertFalse(loops.isShuttingDown(), "the host's loops are the host's to stop");
        }
        finally
        {
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void loopsOfAnotherIoTypeAreRefusedSayingWhichWork()
    {
        final IoEventLoopGroup local = new MultiThreadIoEventLoopGroup(1, LocalIoHandler.newFactory());
        try
        {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LimiterClient.builder().eventLoops(local));
            assertTrue(e.getMessage().contains("epoll or NIO"), e.getMessage());
        }
        finally
        {
            local.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
