package dev.limiter.client;

import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.protocol.policy.TokenLease;
import io.netty.channel.DefaultEventLoop;
import io.netty.channel.socket.nio.NioSocketChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The stages of a call, each on its own, with no socket: a stage either decides a call or hands it on unchanged. */
class CallPathTest
{
    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);
    private static final Decision NODE_SAID = new Decision(true, ReasonCode.ALLOWED, 9, 10, 0, 0, "orders", 1, 1);

    private final Delivery delivery = new Delivery("call-path-test-delivery");
    private final DefaultEventLoop loop = new DefaultEventLoop();
    private DeadlineTimer deadlines;

    /** The rest of the path: records what reached it and answers as a node would. */
    private static final class Next implements CallPath
    {
        final AtomicInteger calls = new AtomicInteger();
        int lastWireCost;

        @Override
        public CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost, final int wireCost,
            final long deadlineNanos)
        {
            calls.incrementAndGet();
            lastWireCost = wireCost;
            return CompletableFuture.completedFuture(NODE_SAID);
        }

        @Override
        public Decision acquireBlocking(final Descriptor descriptor, final int cost, final int wireCost,
            final long deadlineNanos)
        {
            calls.incrementAndGet();
            lastWireCost = wireCost;
            return NODE_SAID;
        }
    }

    @AfterEach
    void close() throws InterruptedException
    {
        if (deadlines != null)
        {
            deadlines.close();
        }
        delivery.close();
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }

    @Test
    void fastRejectionRefusesWhatTheClusterRefusedUntilItsRetryAfterAndHandsOnEverythingElse() throws Exception
    {
        final LocalRejections rejections = new LocalRejections();
        final Next next = new Next();
        final CallPath stage = new FastRejectionStage(rejections, delivery, next);
        final Descriptor refused = Descriptor.of("acme", "/v1/orders/1");
        rejections.denied(refused, 1, new Decision(false, ReasonCode.RATE_LIMITED, 0, 10, 10 * SECOND, SECOND,
            "orders", 1, 1),
            System.nanoTime());

        final Decision async = stage.acquire(refused, 1, 1, SECOND).get(5, TimeUnit.SECONDS);
        final Decision blocking = stage.acquireBlocking(refused, 1, 1, SECOND);
        assertFalse(async.allowed());
        assertFalse(blocking.allowed());
        assertEquals(0, next.calls.get(), "decided without asking the cluster");

        assertSame(NODE_SAID, stage.acquire(Descriptor.of("globex", "/v1/orders/1"), 1, 1, SECOND).get());
        assertSame(NODE_SAID, stage.acquireBlocking(Descriptor.of("acme", "/v1/orders/2"), 1, 1, SECOND));
        assertEquals(2, next.calls.get());
    }

    @Test
    void aDecisionMadeHereReachesAnAsyncCallerOnTheDeliveryThreadNeverOnItsOwnStack() throws Exception
    {
        final LocalRejections rejections = new LocalRejections();
        final CallPath stage = new FastRejectionStage(rejections, delivery, new Next());
        final Descriptor refused = Descriptor.of("acme", "/v1/orders/1");
        rejections.denied(refused, 1, new Decision(false, ReasonCode.RATE_LIMITED, 0, 10, 10 * SECOND, SECOND,
            "orders", 1, 1),
            System.nanoTime());
        final CountDownLatch busy = new CountDownLatch(1);
        delivery.run(() ->
        {
            try
            {
                busy.await(5, TimeUnit.SECONDS);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        });
        final CompletableFuture<Decision> decided = stage.acquire(refused, 1, 1, SECOND);
        assertFalse(decided.isDone(), "not completed on the caller's stack");
        final CompletableFuture<String> completedOn = decided.thenApply(d -> Thread.currentThread().getName());
        busy.countDown();
        assertTrue(completedOn.get(5, TimeUnit.SECONDS).startsWith("call-path-test-delivery"), completedOn.get());
    }

    @Test
    void aTokenBlockStageDecidesFromABlockItHoldsButHandsChecksOn() throws Exception
    {
        final AtomicLong clock = new AtomicLong(1_000 * SECOND);
        final PolicyCache policies = new PolicyCache(Duration.ofHours(1), clock::get);
        final Policy hot = Policy.newBuilder().setId("hot").setSelector(Selector.newBuilder().setRoute("/hot"))
            .setRate(10_000).setBurst(10_000).setScope(Scope.GLOBAL).setOwner("t")
            .setTokenLease(TokenLease.newBuilder().setMaxSharePercent(50)
                .setDemandWindow(com.google.protobuf.Duration.newBuilder().setNanos(50_000_000))
                .setMaxAge(com.google.protobuf.Duration.newBuilder().setSeconds(10))).build();
        policies.received(1, PolicySet.newBuilder().setVersion(1).addPolicies(hot)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("t")).build().toByteArray());
        final TokenBlocks blocks = new TokenBlocks(policies, clock::get, (d, block) -> new CompletableFuture<>());
        final Next next = new Next();
        final CallPath stage = new TokenBlockStage(blocks, circuit(null, null), new ShardRouter(null, lane -> false),
            delivery, next);
        final Descriptor key = Descriptor.of("t", "/hot");
        int asked = 0;
        Decision decided = null;
        for (int i = 0; i < 200 && (decided == null || !decided.fromTokenLease()); i++)
        {
            clock.addAndGet(SECOND / 1000);
            decided = stage.acquireBlocking(key, 1, 1, SECOND);
            asked = Math.max(asked, next.lastWireCost);
        }
        assertTrue(decided.fromTokenLease(), "demand over the window took a block and decided from it");
        assertTrue(asked > 1, "the block was asked of the next stage: " + asked);
        final int before = next.calls.get();
        assertTrue(stage.acquire(key, 1, 1, SECOND).get(5, TimeUnit.SECONDS).fromTokenLease(),
            "async calls use the block too");
        assertSame(NODE_SAID, stage.acquire(key, 0, 0, SECOND).get(5, TimeUnit.SECONDS), "a check is the cluster's");
        assertSame(NODE_SAID, stage.acquireBlocking(key, 0, 0, SECOND));
        assertEquals(before + 2, next.calls.get());
        assertEquals(0, next.lastWireCost, "a check charges nothing");
    }

    @Test
    void aCallNoNodeCanTakeFailsOnTheDeliveryThreadNamingTheNodes() throws Exception
    {
        final ConnectionSet connections = unconnected();
        final ClusterPath path = cluster(connections, circuit(null, connections), false);
        final CountDownLatch busy = new CountDownLatch(1);
        delivery.run(() -> awaitQuietly(busy));
        final CompletableFuture<Decision> call = path.acquire(Descriptor.of("acme", "/v1/orders/1"), 1, 1, SECOND);
        assertFalse(call.isDone(), "failed on the delivery thread, not on the caller's stack");
        busy.countDown();
        final ExecutionException failed = assertThrows(ExecutionException.class, () -> call.get(5, TimeUnit.SECONDS));
        assertInstanceOf(LimiterUnavailableException.class, failed.getCause());
        assertTrue(failed.getCause().getMessage().contains("127.0.0.1:9"), failed.getCause().getMessage());
    }

    @Test
    void afterThresholdFailuresTheOpenCircuitDecidesHereAtOnceWithoutAConnection() throws Exception
    {
        final PolicyCache policies = new PolicyCache(Duration.ofHours(1), System::nanoTime);
        policies.received(1, PolicySet.newBuilder().setVersion(1)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(1000).setBurst(1000).setOwner("t"))
            .build().toByteArray());
        final LocalFallback local = new LocalFallback(policies, System::nanoTime, SECOND, null, () -> 1);
        local.prepare();
        final ConnectionSet connections = unconnected();
        final Circuit circuit = circuit(local, connections);
        final ClusterPath path = cluster(connections, circuit, false);
        for (int i = 0; i < 3; i++)
        {
            final Decision degraded = path.acquire(Descriptor.of("acme", "/v1/orders/1"), 1, 1, SECOND).get(5,
                TimeUnit.SECONDS);
            assertTrue(degraded.degraded(), "no node: decided by the policy's failure mode");
        }
        assertEquals(1, circuit.openLanes(), "three failures in a row open the circuit");
        final CompletableFuture<Decision> open = path.acquire(Descriptor.of("acme", "/v1/orders/1"), 1, 1, SECOND);
        assertInstanceOf(Delivery.Decided.class, open, "decided before any connection was looked at");
        assertTrue(open.get(5, TimeUnit.SECONDS).degraded());
        assertTrue(path.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1, 1, SECOND).degraded());
    }

    @Test
    void aClosedClientFailsCallsAtOnce()
    {
        final ConnectionSet connections = unconnected();
        final ClusterPath path = cluster(connections, circuit(null, connections), true);
        final LimiterException failed = assertThrows(LimiterException.class,
            () -> path.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 1, 1, SECOND));
        assertInstanceOf(LimiterUnavailableException.class, failed);
        assertTrue(failed.getMessage().contains("closed"), failed.getMessage());
    }

    private static void awaitQuietly(final CountDownLatch latch)
    {
        try
        {
            latch.await(5, TimeUnit.SECONDS);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    /** One connection that is never opened (port 9 on loopback is never dialled). */
    private ConnectionSet unconnected()
    {
        final ConnectionSettings settings = new ConnectionSettings(NioSocketChannel.class, null, 1_000, SECOND, 16,
            1 << 20, 0,
            ConnectionSettings.utf8("call-path-test"));
        return new ConnectionSet(List.of(new Connection(new InetSocketAddress("127.0.0.1", 9), loop, settings,
            Backoff.DEFAULT, null)));
    }

    private static Circuit circuit(final LocalFallback local, final ConnectionSet connections)
    {
        final OutageReports reports = connections == null ? null : new OutageReports("call-path-test",
            connections.all(), () -> false);
        return new Circuit(local, null, reports, () -> false, 3, Duration.ofSeconds(60).toNanos(), 0);
    }

    private ClusterPath cluster(final ConnectionSet connections, final Circuit circuit, final boolean closed)
    {
        deadlines = new DeadlineTimer("call-path-test-deadlines", call
            -> call.completeExceptionally(new LimiterTimeoutException("due")),
            delivery.executor());
        return new ClusterPath(new ShardRouter(null, circuit::avoid), circuit, connections, deadlines, delivery,
            new BlockingWait(deadlines),
            () -> closed);
    }
}
