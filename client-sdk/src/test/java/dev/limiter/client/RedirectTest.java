package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.LeaseToken;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A follower's NOT_LEADER: the calls go on to the leader it names, and the client counts the redirect. */
@Timeout(30)
class RedirectTest
{
    private static final byte[] SET = PolicySet.newBuilder().setVersion(1)
        .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setBurst(100).setOwner("infra")).build().toByteArray();

    @Test
    void aCallRefusedByAFollowerIsDecidedByTheLeaderItNamesAndLaterCallsGoThereFirst() throws Exception
    {
        final AtomicInteger refused = new AtomicInteger();
        final AtomicInteger decided = new AtomicInteger();
        try (ScriptedNode leader = new ScriptedNode(request -> answer(request, null, decided));
             ScriptedNode follower = new ScriptedNode(request -> answer(request, leader.endpoint(), refused));
             LimiterClient client = LimiterClient.builder().endpoints(follower.endpoint(), leader.endpoint()).connections(1)
                 .deadline(Duration.ofSeconds(1)).build())
        {
            assertTrue(client.awaitConnected(Duration.ofSeconds(5)));
            assertEquals(0, client.stats().redirects());
            final Descriptor key = Descriptor.of("t", "/x");
            for (int i = 0; i < 20; i++)
            {
                final Decision d = client.acquireBlocking(key, 1);
                assertTrue(d.allowed(), "call " + i + ": " + d);
                assertFalse(d.degraded(), "decided by a node, not by the SDK: " + d);
            }
            // Round robin sends one of the first two calls to the follower; after its answer the
            // client goes to the leader first.
            assertEquals(1, refused.get(), "frames the follower refused");
            assertEquals(1, client.stats().redirects(), "the redirect is counted");
            assertEquals(20, decided.get(), "every call decided by the leader");
        }
    }

    @Test
    void aReleaseRefusedByANodeNamingItselfIsTriedAgainAfterABackoffUntilTheNodeLeads() throws Exception
    {
        // A leader handing its lead over (or one not ready yet) refuses naming no one else: the
        // release waits a little and tries again instead of spending its tries at once.
        final AtomicInteger releases = new AtomicInteger();
        final long[] firstAndLast = new long[2];
        final AtomicReference<String> self = new AtomicReference<>();
        try (ScriptedNode node = new ScriptedNode(request ->
        {
            if (request.type() != MessageType.RELEASE)
            {
                return answer(request, null, new AtomicInteger());
            }
            final long now = System.nanoTime();
            if (releases.getAndIncrement() == 0)
            {
                firstAndLast[0] = now;
            }
            firstAndLast[1] = now;
            final ByteBuf answer = Unpooled.buffer();
            if (releases.get() <= 3)
            {
                ErrorCodec.encode(answer, request.correlationId(), ErrorCode.NOT_LEADER, releases.get() == 2 ? "" : self.get());
                return answer;
            }
            final int start = ResultCodec.beginBatch(answer, MessageType.RESULT, request.correlationId(), 1);
            ResultCodec.putRecord(answer, ResultCodec.recordOffset(start, 0), true, ReasonCode.RELEASED, 1, 0, 1, 0, 0, 1, 1);
            ResultCodec.beginPolicies(answer, 0);
            Frame.finish(answer, start);
            return answer;
        });
             LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1).deadline(Duration.ofSeconds(1)).build())
        {
            self.set(node.endpoint());
            assertTrue(client.awaitConnected(Duration.ofSeconds(5)));
            final String lease = new LeaseToken(42, 7, 1, new byte[AcquireCodec.MIN_ENTRY_LENGTH]).encode();
            client.release(lease).get(5, TimeUnit.SECONDS);
            assertEquals(4, releases.get(), "three refusals, then the release");
            assertTrue(firstAndLast[1] - firstAndLast[0] >= TimeUnit.MILLISECONDS.toNanos(15),
                "three waits of 5-25 ms between the tries, not " + (firstAndLast[1] - firstAndLast[0]) / 1000 + " us");
        }
    }

    /** POLICIES and PING answered; decision frames refused with NOT_LEADER naming {@code leader}, or allowed when it is null. */
    private static ByteBuf answer(final ScriptedNode.Request request, final String leader, final AtomicInteger counted)
    {
        final ByteBuf answer = Unpooled.buffer();
        final int type = request.type();
        final long correlationId = request.correlationId();
        if (type == MessageType.POLICIES)
        {
            return ScriptedNode.policies(SET);
        }
        else if (type == MessageType.PING)
        {
            Frame.finish(answer, Frame.begin(answer, MessageType.PONG, correlationId));
        }
        else if (type == MessageType.ACQUIRE || type == MessageType.BATCH_ACQUIRE)
        {
            if (leader != null)
            {
                counted.incrementAndGet();
                ErrorCodec.encode(answer, correlationId, ErrorCode.NOT_LEADER, leader);
                return answer;
            }
            counted.addAndGet(ScriptedNode.entries(request));
            return ScriptedNode.allowAll(request);
        }
        else
        {
            return null;
        }
        return answer;
    }
}
