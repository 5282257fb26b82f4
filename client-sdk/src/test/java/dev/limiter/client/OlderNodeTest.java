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

import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
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
        try (ServerSocket listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress()))
        {
            final Thread node = new Thread(() -> serveLikeAnOlderNode(listener, set, subscriptionBodies), "older-node");
            node.setDaemon(true);
            node.start();
            try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + listener.getLocalPort()).connections(1).build())
            {
                final long until = System.currentTimeMillis() + 5000;
                while (client.policies().version() == 0 && System.currentTimeMillis() < until)
                {
                    Thread.sleep(10);
                }
                assertEquals(7, client.policies().version(), "the policy set arrived through the one-byte subscription");
                assertEquals(0, client.fleetInstances(), "an older node reports no fleet: the SDK keeps whole budgets");
                assertTrue(subscriptionBodies.size() >= 2 && subscriptionBodies.get(0) > 1 && subscriptionBodies.get(1) == 1,
                    "first with an instance id, then without: " + subscriptionBodies);
            }
        }
    }

    /** Answers POLICIES as nodes did before FLEET: a body other than one byte is MALFORMED_FRAME. */
    private static void serveLikeAnOlderNode(final ServerSocket listener, final byte[] set, final List<Integer> subscriptionBodies)
    {
        try (Socket socket = listener.accept())
        {
            final DataInputStream in = new DataInputStream(socket.getInputStream());
            final OutputStream out = socket.getOutputStream();
            while (true)
            {
                final int length = in.readInt();
                final byte[] rest = new byte[length];
                in.readFully(rest);
                final int type = rest[Frame.TYPE_OFFSET - Frame.LENGTH_FIELD_LENGTH] & 0xFF;
                if (type != MessageType.POLICIES)
                {
                    continue;
                }
                final int body = length - (Frame.HEADER_LENGTH - Frame.LENGTH_FIELD_LENGTH);
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
                final byte[] bytes = new byte[answer.readableBytes()];
                answer.readBytes(bytes);
                out.write(bytes);
                out.flush();
            }
        }
        catch (final Exception ignored)
        {
            // the client closed
        }
    }
}
