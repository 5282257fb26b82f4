package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An SDK against nodes that do not answer HELLO as a node of this build does. */
@Timeout(30)
class OlderNodeTest
{
    @Test
    void anSdkAsksANodeThatListsNoFeaturesOnlyWhatTheBaseProtocolHas() throws Exception
    {
        final List<Integer> subscriptionBodies = new CopyOnWriteArrayList<>();
        final List<Integer> types = new CopyOnWriteArrayList<>();
        final byte[] set = PolicySet.newBuilder().setVersion(1)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setBurst(2).setOwner("infra")).build().toByteArray();
        try (ScriptedNode node = new ScriptedNode(request -> likeAnOlderNode(request, set, subscriptionBodies, types));
             LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1).build())
        {
            Await.until("the node's policy set", Duration.ofSeconds(5), () -> client.policies().version() != 0);
            assertEquals(7, client.policies().version(), "the policy set arrived through the one-byte subscription");
            assertEquals(0, client.stats().fleetInstances(),
                "an older node reports no fleet: the SDK keeps whole budgets");
            assertEquals(List.of(1), subscriptionBodies.subList(0, 1), "never asked with an instance id: "
                + subscriptionBodies);
            assertTrue(subscriptionBodies.stream().allMatch(body -> body == 1),
                "every subscription in the old form: " + subscriptionBodies);
            assertEquals(MessageType.HELLO, types.get(0), "HELLO comes first: " + types);
            assertTrue(types.contains(MessageType.SHARD_MAP), "a node from before HELLO may serve shard maps: "
                + types);
            assertEquals(1, client.stats().openConnections(), "its UNKNOWN_TYPE answers leave the connection open");
        }
    }

    @Test
    void aNodeThatRefusesHelloOrLeavesItUnansweredIsAskedAgainOnTheSameLinkAndGreetedThen() throws Exception
    {
        for (final boolean silent : new boolean[] {false, true})
        {
            final List<Integer> hellos = new CopyOnWriteArrayList<>();
            final byte[] set = PolicySet.newBuilder().setVersion(1)
                .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setBurst(2).setOwner("infra")).build()
                .toByteArray();
            try (ScriptedNode node = new ScriptedNode(request -> firstHelloFails(request, silent, set, hellos), 4);
                 LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1)
                     .connectTimeout(java.time.Duration.ofMillis(300)).startupTimeout(java.time.Duration.ofSeconds(5)).build())
            {
                assertEquals(7, client.policies().version(), (silent ? "silent" : "refused")
                    + " HELLO, then another: " + hellos);
                assertEquals(List.of(0, 0), hellos.subList(0, 2), "asked twice on the first connection: " + hellos);
            }
        }
    }

    /** The first HELLO is refused (INTERNAL) or never answered; later ones are answered as by a node of this build. */
    private static ByteBuf firstHelloFails(final ScriptedNode.Request request, final boolean silent, final byte[] set,
        final List<Integer> hellos)
    {
        if (request.type() == MessageType.HELLO)
        {
            hellos.add(request.connection());
            if (hellos.size() > 1)
            {
                return null; // ScriptedNode answers as a node of this build
            }
            final ByteBuf refusal = Unpooled.buffer();
            if (!silent)
            {
                ErrorCodec.encode(refusal, request.correlationId(), ErrorCode.INTERNAL, "not now");
            }
            return refusal;
        }
        if (request.type() == MessageType.PING)
        {
            return ScriptedNode.pong(request); // as every node does: build() returns once a PING went round
        }
        if (request.type() != MessageType.POLICIES)
        {
            return null;
        }
        final ByteBuf answer = Unpooled.buffer();
        final int start = Frame.begin(answer, MessageType.POLICIES_RESULT, 0);
        answer.writeLong(7).writeBytes(set);
        Frame.finish(answer, start);
        return answer;
    }

    /**
     * Answers as nodes did before HELLO: an unknown type is UNKNOWN_TYPE, a POLICIES body other than one byte
     * MALFORMED_FRAME.
     */
    private static ByteBuf likeAnOlderNode(final ScriptedNode.Request request, final byte[] set,
        final List<Integer> subscriptionBodies,
        final List<Integer> types)
    {
        types.add(request.type());
        if (request.type() == MessageType.PING)
        {
            return ScriptedNode.pong(request); // PING is base protocol: build() returns once one went round
        }
        final ByteBuf answer = Unpooled.buffer();
        if (request.type() == MessageType.HELLO || request.type() == MessageType.SHARD_MAP)
        {
            ErrorCodec.encode(answer, request.correlationId(), ErrorCode.UNKNOWN_TYPE, "unknown message type "
                + request.type());
            return answer;
        }
        if (request.type() != MessageType.POLICIES)
        {
            return null;
        }
        final int body = request.bodyLength();
        subscriptionBodies.add(body);
        if (body != 1)
        {
            ErrorCodec.encode(answer, 0, ErrorCode.MALFORMED_FRAME,
                "POLICIES body is one byte of flags (bit 0: subscribe), was " +
                body + " bytes");
        }
        else
        {
            final int start = Frame.begin(answer, MessageType.POLICIES_RESULT, 0);
            answer.writeLong(7).writeBytes(set);
            Frame.finish(answer, start);
        }
        return answer;
    }
}
