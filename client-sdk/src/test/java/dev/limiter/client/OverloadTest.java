package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A node whose replication log is behind answers OVERLOADED and decides nothing in the frame: the
 * SDK sends those calls again after a growing backoff, within their deadlines, instead of handing
 * the caller an error the node itself says to retry.
 */
@Timeout(30)
class OverloadTest
{
    private static final byte[] SET = PolicySet.newBuilder().setVersion(1)
        .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setBurst(100).setOwner("infra")).build().toByteArray();

    /** Decision frames answered OVERLOADED while {@code overloadedLeft} is above 0 (counting down), else allowed. */
    private final AtomicInteger overloadedLeft = new AtomicInteger();
    private final AtomicInteger overloadedAnswers = new AtomicInteger();

    @Test
    void callsOfAnOverloadedFrameAreSentAgainAfterABackoffAndDecidedByTheNode() throws Exception
    {
        try (ScriptedNode node = new ScriptedNode(this::answer);
             LimiterClient client = clientOf(node, Duration.ofSeconds(1), true))
        {
            overloadedLeft.set(3);
            final long start = System.nanoTime();
            final Decision d = client.acquireBlocking(Descriptor.of("t", "/x"), 1);
            final long tookNanos = System.nanoTime() - start;
            assertTrue(d.allowed(), d.toString());
            assertFalse(d.degraded(), "decided by the node once it had caught up: " + d);
            assertEquals(3, overloadedAnswers.get());
            assertEquals(3, client.stats().overloadedFrames(), "each OVERLOADED frame is counted");
            // Backoffs of at least half of 1, 2 and 4 ms: not sent again at once.
            assertTrue(tookNanos >= TimeUnit.MICROSECONDS.toNanos(3_500), "took " + tookNanos + " ns");
            assertFalse(client.stats().circuitOpen(), "an overloaded node is not a dead one");
        }
    }

    @Test
    void aCallTheClusterStaysOverloadedForEndsAtItsDeadlineDecidedLocallyAndIsNotHammered() throws Exception
    {
        try (ScriptedNode node = new ScriptedNode(this::answer);
             LimiterClient client = clientOf(node, Duration.ofMillis(200), true))
        {
            overloadedLeft.set(Integer.MAX_VALUE);
            final long start = System.nanoTime();
            final Decision d = client.acquireBlocking(Descriptor.of("t", "/x"), 1);
            final long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(d.degraded(), "the policy's local fallback decided at the deadline: " + d);
            assertTrue(tookMillis >= 190 && tookMillis < 1_000, "ended at its 200 ms deadline, took " + tookMillis + " ms");
            // Doubling backoffs (0.5-1, 1-2, ... 16-32 ms, then 16-32 ms each) fit about 9 to 18 tries in 200 ms, not thousands.
            assertTrue(overloadedAnswers.get() >= 4 && overloadedAnswers.get() <= 20, "sent " + overloadedAnswers.get() + " times");
        }
    }

    @Test
    void withoutALocalFallbackACallTheClusterStaysOverloadedForTimesOutAtItsDeadline() throws Exception
    {
        try (ScriptedNode node = new ScriptedNode(this::answer);
             LimiterClient client = clientOf(node, Duration.ofMillis(150), false))
        {
            overloadedLeft.set(Integer.MAX_VALUE);
            final CompletionException failed = assertThrows(CompletionException.class,
                () -> client.acquire(Descriptor.of("t", "/x"), 1).join());
            assertInstanceOf(LimiterTimeoutException.class, failed.getCause());
            assertTrue(overloadedAnswers.get() >= 2, "sent again before it timed out: " + overloadedAnswers.get());
        }
    }

    @Test
    void closingTheClientEndsACallWaitingOutItsBackoff() throws Exception
    {
        try (ScriptedNode node = new ScriptedNode(this::answer))
        {
            final LimiterClient client = clientOf(node, Duration.ofSeconds(10), false);
            overloadedLeft.set(Integer.MAX_VALUE);
            final java.util.concurrent.CompletableFuture<Decision> call = client.acquire(Descriptor.of("t", "/x"), 1);
            Await.until("the node's OVERLOADED answer", Duration.ofSeconds(5), () -> overloadedAnswers.get() > 0);
            client.close();
            final java.util.concurrent.ExecutionException ended = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> call.get(2, TimeUnit.SECONDS), "ended by close, not left to a deadline 10 s away");
            assertInstanceOf(LimiterUnavailableException.class, ended.getCause());
        }
    }

    private static LimiterClient clientOf(final ScriptedNode node, final Duration deadline, final boolean followPolicies)
        throws InterruptedException
    {
        final LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1).deadline(deadline)
            .followPolicies(followPolicies).build();
        assertTrue(client.awaitConnected(Duration.ofSeconds(5)));
        if (followPolicies)
        {
            Await.until("the node's policy set", Duration.ofSeconds(5), () -> client.policies().version() != 0);
        }
        return client;
    }

    private ByteBuf answer(final ScriptedNode.Request request)
    {
        final int type = request.type();
        if (type == MessageType.POLICIES)
        {
            return ScriptedNode.policies(SET);
        }
        if (type == MessageType.PING)
        {
            return ScriptedNode.pong(request);
        }
        if (type == MessageType.ACQUIRE || type == MessageType.BATCH_ACQUIRE)
        {
            if (overloadedLeft.getAndDecrement() > 0)
            {
                overloadedAnswers.incrementAndGet();
                final ByteBuf answer = Unpooled.buffer();
                ErrorCodec.encode(answer, request.correlationId(), ErrorCode.OVERLOADED,
                    "the replication log is behind; nothing in this frame was decided; retry after a short backoff");
                return answer;
            }
            return ScriptedNode.allowAll(request);
        }
        return null;
    }
}
