package dev.limiter.server.engine;

import dev.limiter.protocol.ShardMap;
import dev.limiter.server.table.KeyHash;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A client routes an entry by {@link ShardMap#tenantHash} of its tenant; the node places the
 * tenant's buckets by its own key hash of the same bytes. They must agree for every tenant, or a
 * client sends calls to a node that does not lead their shard.
 */
class TenantShardAgreementTest
{
    @Test
    void theClientsTenantHashIsTheNodesKeyHashAndBothPutATenantOnTheSameShard()
    {
        final Random random = new Random(42);
        for (int i = 0; i < 20_000; i++)
        {
            final byte[] tenant;
            if (i % 3 == 0)
            {
                tenant = new byte[random.nextInt(64)];
                random.nextBytes(tenant); // every byte value, every length around the 8-byte steps
            }
            else
            {
                tenant = ("tenant-" + i + (i % 5 == 0 ? "-ünïcode" : "")).getBytes(StandardCharsets.UTF_8);
            }
            final long nodeHash = KeyHash.hash(new UnsafeBuffer(tenant), 0, tenant.length);
            assertEquals(nodeHash == 0 ? 1 : nodeHash, ShardMap.tenantHash(tenant), "tenant " + i);
            for (final int shards : new int[] {1, 2, 3, 7, 64})
            {
                assertEquals(FrameRouter.tenantShard(new UnsafeBuffer(tenant), 0, tenant.length, shards),
                    ShardMap.shardOf(ShardMap.tenantHash(tenant), shards), "tenant " + i + " over " + shards + " shards");
            }
        }
    }
}
