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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SDK's circuit against a scripted node: silent, then refusing with errors, then answering. */
@Timeout(30)
class CircuitTest
{
    private enum Mode { SILENT, ERROR, ANSWER }

    private volatile Mode mode = Mode.SILENT;
    /** Whether DEGRADED_REPORT is taken (else refused as by a follower during an election). */
    private volatile boolean takeReports;
    private final java.util.concurrent.atomic.AtomicInteger reportsTaken = new java.util.concurrent.atomic.AtomicInteger();

    /** A client of the scripted node that holds its policy set. */
    private static LimiterClient clientOf(final ScriptedNode node) throws InterruptedException
    {
        final LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1)
            .deadline(Duration.ofMillis(300)).circuit(2, Duration.ofMillis(100)).recoveryRamp(Duration.ZERO).build();
        final long until = System.currentTimeMillis() + 5000;
        while (client.policies().version() == 0 && System.currentTimeMillis() < until)
        {
            Thread.sleep(10);
        }
        return client;
    }

    private static Decision untilTheNodeDecides(final LimiterClient client, final Descriptor key) throws InterruptedException
    {
        final long back = System.currentTimeMillis() + 3000;
        Decision d = client.acquireBlocking(key, 1);
        while (d.degraded() && System.currentTimeMillis() < back)
        {
            Thread.sleep(20);
            d = client.acquireBlocking(key, 1);
        }
        return d;
    }

    @Test
    void aDegradedWindowNoNodeTookIsSentWithTheNextOne() throws Exception
    {
        try (ScriptedNode node = new ScriptedNode(this::answer);
             LimiterClient client = clientOf(node))
        {
            final Descriptor key = Descriptor.of("t", "/x");
            for (int outage = 1; outage <= 2; outage++)
            {
                mode = Mode.SILENT;
                for (int i = 0; i < 2; i++)
                {
                    assertTrue(client.acquireBlocking(key, 1).degraded());
                }
                takeReports = outage == 2; // the first window finds no node that takes it
                mode = Mode.ANSWER;
                Thread.sleep(200);
                assertFalse(untilTheNodeDecides(client, key).degraded());
            }
            final long deadline = System.currentTimeMillis() + 3000;
            while (client.degradedWindowsReported() < 2 && System.currentTimeMillis() < deadline)
            {
                Thread.sleep(10);
            }
            assertEquals(2, client.degradedWindowsReported(), "the first window went out with the second");
            assertEquals(2, reportsTaken.get());
        }
    }

    @Test
    void aProbeAnsweredWithAnErrorLetsTheNextProbeGoAndAnAnswerClosesTheCircuit() throws Exception
    {
        try (ScriptedNode node = new ScriptedNode(this::answer);
             LimiterClient client = clientOf(node))
        {
            final Descriptor key = Descriptor.of("t", "/x");
            for (int i = 0; i < 2; i++)
            {
                assertTrue(client.acquireBlocking(key, 1).degraded(), "no answer in time: decided locally");
            }
            assertTrue(client.circuitOpen());

            // The node is back but failing: the probe gets an error, not a decision.
            mode = Mode.ERROR;
            Thread.sleep(200);
            final LimiterRequestException refused = assertThrows(LimiterRequestException.class, () -> client.acquireBlocking(key, 1));
            assertTrue(refused.getMessage().contains("busy"), refused.getMessage());

            // It recovers: a later probe must still be sent, and its answer closes the circuit.
            mode = Mode.ANSWER;
            final Decision d = untilTheNodeDecides(client, key);
            assertFalse(d.degraded(), "the node decides again: " + d);
            assertFalse(client.circuitOpen());
        }
    }

    private final byte[] set = PolicySet.newBuilder().setVersion(1)
        .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setBurst(100).setOwner("infra")).build().toByteArray();

    /** The node's side of the script: policies always, acquires and reports as the test's mode says. */
    private ByteBuf answer(final ScriptedNode.Request request)
    {
        final ByteBuf answer = Unpooled.buffer();
        final int type = request.type();
        final long correlationId = request.correlationId();
        if (type == MessageType.POLICIES)
        {
            return ScriptedNode.policies(set);
        }
        else if (type == MessageType.ACQUIRE || type == MessageType.BATCH_ACQUIRE)
        {
            if (mode == Mode.SILENT)
            {
                return null;
            }
            if (mode == Mode.ANSWER)
            {
                return ScriptedNode.allowAll(request);
            }
            ErrorCodec.encode(answer, correlationId, ErrorCode.INTERNAL, "node busy, try later");
        }
        else if (type == MessageType.DEGRADED_REPORT)
        {
            if (takeReports)
            {
                reportsTaken.incrementAndGet();
                Frame.finish(answer, Frame.begin(answer, MessageType.DEGRADED_REPORT_RESULT, correlationId));
            }
            else
            {
                ErrorCodec.encode(answer, correlationId, ErrorCode.NOT_LEADER, "");
            }
        }
        else
        {
            return null;
        }
        return answer;
    }
}
