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

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An SDK against a node from before FLEET, which takes only the one-byte policy subscription. */
@Timeout(30)
class OlderNodeTest
{
    @Test
    void anSdkSubscribesWithoutAnInstanceIdWhenTheNodeRefusesOne() throws Exception
    {
        final List<Integer> subscriptionBodies = new CopyOnWriteArrayList<>();
        final byte[] set = PolicySet.newBuilder().setVersion(1)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setBurst(2).setOwner("infra")).build().toByteArray();
        try (ScriptedNode node = new ScriptedNode(request -> likeAnOlderNode(request, set, subscriptionBodies));
             LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1).build())
        {
            final long until = System.currentTimeMillis() + 5000;
            while (client.policies().version() == 0 && System.currentTimeMillis() < until)
            {
                Thread.sleep(10);
            }
            assertEquals(7, client.policies().version(), "the policy set arrived through the one-byte subscription");
            assertEquals(0, client.stats().fleetInstances(), "an older node reports no fleet: the SDK keeps whole budgets");
            assertTrue(subscriptionBodies.size() >= 2 && subscriptionBodies.get(0) > 1 && subscriptionBodies.get(1) == 1,
                "first with an instance id, then without: " + subscriptionBodies);
        }
    }

    /** Answers POLICIES as nodes did before FLEET: a body other than one byte is MALFORMED_FRAME. */
    private static ByteBuf likeAnOlderNode(final ScriptedNode.Request request, final byte[] set, final List<Integer> subscriptionBodies)
    {
        if (request.type() != MessageType.POLICIES)
        {
            return null;
        }
        final int body = request.bodyLength();
        subscriptionBodies.add(body);
        final ByteBuf answer = Unpooled.buffer();
        if (body != 1)
        {
            ErrorCodec.encode(answer, 0, ErrorCode.MALFORMED_FRAME, "POLICIES body is one byte of flags (bit 0: subscribe), was " +
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
