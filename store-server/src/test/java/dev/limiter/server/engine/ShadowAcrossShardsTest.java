package dev.limiter.server.engine;

import dev.limiter.server.testing.EmbeddedDataPlane;
import dev.limiter.server.testing.ManualClock;
import io.netty.buffer.ByteBuf;
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

    private final EmbeddedDataPlane plane = new EmbeddedDataPlane(POLICIES, 2,
        new ManualClock(TimeUnit.SECONDS.toNanos(1_000)));

    @AfterEach
    void stop()
    {
        plane.close();
    }

    @Test
    void everyEvaluationIsComparedWhicheverShardHoldsTheShadow() throws Exception
    {
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
            ByteBuf answer = plane.exchange(EmbeddedDataPlane.acquireFrame(++correlation, tenant, "/v1/orders", 1));
            while (answer != null)
            {
                answer.release();
                answer = plane.channel().readOutbound();
            }
        }

        final var read = ShadowComparisons.of(plane.shards(), plane.policies(), "orders-global", 0);
        plane.runPendingTasks();
        final ShadowComparisons.Comparison compared = read.get(5, TimeUnit.SECONDS);
        assertEquals(tenants.size(), compared.rows().size(), compared.toJson());
        assertEquals(tenants.size(), compared.rows().stream().mapToLong(ShadowComparisons.Row::decisions).sum(),
            "every evaluation compared, on the shadow's shard or after the frame: " + compared.toJson());
        assertEquals(tenants.size() - 2, compared.rows().stream().mapToLong(ShadowComparisons.Row::newlyRejected).sum(),
            "the global burst of 2, then every request newly rejected: " + compared.toJson());
        assertEquals(0, compared.rows().stream().mapToLong(ShadowComparisons.Row::enforcedRejections).sum());
    }
}
