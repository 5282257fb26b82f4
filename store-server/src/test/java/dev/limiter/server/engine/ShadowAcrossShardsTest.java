package dev.limiter.server.engine;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.net.DataPlaneHandler;
import dev.limiter.server.net.FrameDecoder;
import dev.limiter.server.net.PolicyPublisher;
import dev.limiter.server.net.SdkReportGate;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.FastThreadLocal;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A GLOBAL shadow of a TENANT policy on a node of two shards: the shadow's bucket lives on one shard,
 * the tenants' on both, so some evaluations are compared by the shard that finishes the frame last.
 */
class ShadowAcrossShardsTest
{
    private static final String POLICIES = "{\"version\":1,"
        + "\"defaultPolicy\":{\"id\":\"default\",\"rate\":1,\"burst\":1,\"owner\":\"test\"},"
        + "\"policies\":["
        + "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders\"},\"rate\":1,\"period\":\"1s\",\"burst\":100,"
        + "\"scope\":\"TENANT\",\"owner\":\"test\"},"
        + "{\"id\":\"orders-global\",\"selector\":{\"route\":\"/v1/orders\"},\"rate\":1,\"period\":\"3600s\","
        + "\"burst\":2,"
        + "\"scope\":\"GLOBAL\",\"mode\":\"SHADOW\",\"owner\":\"test\"}]}";

    private final PolicyState policies = new PolicyState(1);
    private final ServerMetrics metrics = new ServerMetrics();
    private final List<Shard> shards = new ArrayList<>();
    private EmbeddedChannel channel;

    @AfterEach
    void stop()
    {
        channel.finishAndReleaseAll();
        shards.forEach(Shard::stop);
    }

    @Test
    void everyEvaluationIsComparedWhicheverShardHoldsTheShadow() throws Exception
    {
        final PolicySet.Builder set = PolicySet.newBuilder();
        JsonFormat.parser().merge(POLICIES, set);
        assertEquals(PolicyState.Status.OK, policies.apply(PolicyState.command("test", 0).setBootstrap(set).build())
            .status());
        channel = new EmbeddedChannel();
        final ManualClock clock = new ManualClock(TimeUnit.SECONDS.toNanos(1_000));
        for (int s = 0; s < 2; s++)
        {
            shards.add(new Shard(s, 2, 1024, 64 * 1024, clock, (policy, key, offset, length) -> null,
                (EventLoop)channel.eventLoop()));
        }
        final FastThreadLocal<FrameRouter> routers = new FastThreadLocal<>()
        {
            @Override
            protected FrameRouter initialValue()
            {
                return new FrameRouter(metrics);
            }
        };
        final PolicyControl control = new PolicyControl(policies, null, 1);
        final PolicyPublisher publisher = new PolicyPublisher(policies, 1 << 20,
            () -> metrics.refused("sdk-instance-ids-per-address"));
        channel.pipeline().addLast(new FrameDecoder(1 << 20, null), new DataPlaneHandler(policies::index,
            policies::activeExemptions, publisher, () -> control, shards, metrics, routers, null, () -> "{}",
            new SdkReportGate()));

        // Tenants on both shards: the shadow's one global bucket is on one of them only.
        final List<String> tenants = new ArrayList<>();
        final Set<Integer> tenantShards = new HashSet<>();
        for (int i = 0; tenants.size() < 8 || tenantShards.size() < 2; i++)
        {
            final byte[] name = ("tenant-" + i).getBytes(StandardCharsets.UTF_8);
            tenantShards.add(FrameRouter.tenantShard(new UnsafeBuffer(name), 0, name.length, 2));
            tenants.add("tenant-" + i);
        }
        long correlation = 0;
        for (final String tenant : tenants)
        {
            final ByteBuf frame = Unpooled.buffer();
            final int start = AcquireCodec.beginBatch(frame, MessageType.ACQUIRE, ++correlation);
            AcquireCodec.appendEntry(frame, 1, AcquireCodec.encodeFields(tenant, "", "", "/v1/orders", "", ""));
            AcquireCodec.finishBatch(frame, start, 1);
            channel.writeInbound(frame);
            channel.runPendingTasks();
            Object answer;
            while ((answer = channel.readOutbound()) != null)
            {
                ((ByteBuf)answer).release();
            }
        }

        final var read = ShadowComparisons.of(shards, policies, "orders-global", 0);
        channel.runPendingTasks();
        final ShadowComparisons.Comparison compared = read.get(5, TimeUnit.SECONDS);
        assertEquals(tenants.size(), compared.rows().size(), compared.toJson());
        assertEquals(tenants.size(), compared.rows().stream().mapToLong(ShadowComparisons.Row::decisions).sum(),
            "every evaluation compared, on the shadow's shard or after the frame: " + compared.toJson());
        assertEquals(tenants.size() - 2, compared.rows().stream().mapToLong(ShadowComparisons.Row::newlyRejected).sum(),
            "the global burst of 2, then every request newly rejected: " + compared.toJson());
        assertEquals(0, compared.rows().stream().mapToLong(ShadowComparisons.Row::enforcedRejections).sum());
    }
}
