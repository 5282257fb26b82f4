package dev.limiter.server.engine;

import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ResultDecoder;
import dev.limiter.server.testing.EmbeddedDataPlane;
import dev.limiter.server.testing.ManualClock;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Decision ids and the sampled log of rejections, on an {@link EmbeddedDataPlane} of one shard (decided
 * inline, manual clock).
 */
class RejectedDecisionsTest
{
    private static final long NOW_MILLIS = 1_765_000_000_000L;
    private static final String POLICIES = "{\"version\":1,"
        + "\"defaultPolicy\":{\"id\":\"default\",\"rate\":1,\"burst\":1,\"owner\":\"test\"},"
        + "\"policies\":[{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,"
        + "\"period\":\"3600s\","
        + "\"burst\":1,\"scope\":\"TENANT\",\"owner\":\"test\"}]}";

    private final RejectedDecisions log = new RejectedDecisions(64, () -> NOW_MILLIS);
    private final ResultDecoder decoder = new ResultDecoder();
    private EmbeddedDataPlane plane;
    private long correlation;

    @BeforeEach
    void start()
    {
        plane = new EmbeddedDataPlane(POLICIES, 1, new ManualClock(TimeUnit.SECONDS.toNanos(1_000)), log);
    }

    @AfterEach
    void stop()
    {
        plane.close();
    }

    @Test
    void aRejectionIsSampledWithItsIdPolicyVersionTenantRouteAndReasonAndAnAllowedDecisionIsNot()
    {
        hello(Features.SDK);
        final long allowedBase = acquire("acme", "/v1/orders/7", true);
        assertNotEquals(0, allowedBase, "a peer that listed DECISION_IDS is told each frame's id base");
        assertEquals(0, log.sampled(), "an allowed decision is not sampled");

        final long refusedBase = acquire("acme", "/v1/orders/8", false);
        assertNotEquals(allowedBase, refusedBase, "every frame has its own base");
        final String id = DecisionIds.format(refusedBase, 0);
        final List<RejectedDecisions.Sample> samples = log.newest(10, null, null);
        assertEquals(List.of(new RejectedDecisions.Sample(id, NOW_MILLIS, "orders", 1, "acme", "/v1/orders/{id}",
            "RATE_LIMITED")), samples, "the policy's route template, not the path");
        assertEquals(samples.get(0), log.find(id));
        assertNull(log.find(DecisionIds.format(allowedBase, 0)), "the allowed decision is nowhere");

        acquire("globex", "/v2/other", true);
        final long defaultBase = acquire("globex", "/v2/other", false);
        final RejectedDecisions.Sample byDefault = log.find(DecisionIds.format(defaultBase, 0));
        assertEquals("default", byDefault.policy());
        assertEquals("/v2/other", byDefault.route(), "no template: the path");
        assertEquals(2, log.newest(10, null, null).size());
        assertEquals(List.of(byDefault), log.newest(10, null, "globex"));
        assertEquals(List.of(samples.get(0)), log.newest(10, "orders", null));
        assertEquals(2, log.sampled());
        assertEquals(0, log.dropped());
    }

    @Test
    void aPeerThatDidNotListTheFeatureGetsNoIdsButItsRejectionsAreSampled()
    {
        acquire("acme", "/v1/orders/1", true);
        assertEquals(0, acquire("acme", "/v1/orders/1", false), "the answer ends as an older SDK reads it");
        assertEquals(1, log.sampled());
        hello(Features.BEFORE_HELLO);
        assertEquals(0, acquire("acme", "/v1/orders/1", false));
    }

    @Test
    void beyondTheRatePerSecondOnlyOneInKIsSampledAndTheRestCounted()
    {
        final RejectedDecisions small = new RejectedDecisions(8, () -> NOW_MILLIS);
        final int calls = RejectedDecisions.ALL_PER_SECOND + 2 * RejectedDecisions.ONE_IN;
        for (int i = 0; i < calls; i++)
        {
            small.record(i + 1, 0, NOW_MILLIS, "p", 1, 1, null, 0, 0, "/r", 0, 0);
        }
        assertEquals(RejectedDecisions.ALL_PER_SECOND + 2, small.sampled());
        assertEquals(calls - small.sampled(), small.dropped());
        assertEquals(8, small.newest(100, null, null).size(), "the ring holds its capacity, newest first");
        assertEquals(DecisionIds.format(calls / RejectedDecisions.ONE_IN * RejectedDecisions.ONE_IN, 0),
            small.newest(1, null, null).get(0).id(), "the last one in k");
    }

    private void hello(final long features)
    {
        final ByteBuf frame = Unpooled.buffer();
        HelloCodec.writeHello(frame, ++correlation, features);
        final ByteBuf answer = plane.exchange(frame);
        assertEquals(MessageType.HELLO_RESULT, Frame.type(answer));
        answer.release();
    }

    /** One ACQUIRE; asserts its outcome and returns the answer's decision-id base (0: none). */
    private long acquire(final String tenant, final String route, final boolean allowed)
    {
        final ByteBuf answer = plane.exchange(EmbeddedDataPlane.acquireFrame(++correlation, tenant, route, 1));
        try
        {
            assertNull(decoder.wrap(answer, Frame.bodyOffset(answer), Frame.frameEnd(answer)));
            assertEquals(allowed, decoder.allowed(0), tenant + " " + route);
            assertEquals(1, decoder.count());
            assertEquals(correlation, Frame.correlationId(answer));
            return decoder.decisionIdBase();
        }
        finally
        {
            answer.release();
        }
    }
}
