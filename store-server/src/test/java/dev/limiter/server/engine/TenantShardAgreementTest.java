package dev.limiter.server.engine;

import dev.limiter.protocol.ShardMap;
import dev.limiter.server.table.BucketKeys;
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

    @Test
    void aClientPlacesGlobalAndClientIpBucketsWhereTheNodesKeyHashPutsThem()
    {
        final Random random = new Random(7);
        final byte[] clientKey = new byte[ShardMap.KEY_PREFIX_LENGTH + 16];
        final UnsafeBuffer nodeKey = new UnsafeBuffer(new byte[ShardMap.KEY_PREFIX_LENGTH + 16]);
        assertEquals(BucketKeys.PREFIX_LENGTH, ShardMap.KEY_PREFIX_LENGTH);
        for (int i = 0; i < 20_000; i++)
        {
            final int ordinal = random.nextInt(1 << 16);
            final long version = random.nextLong() & 0xFFFF_FFFFL;
            final boolean withIp = random.nextBoolean();
            final int length = ShardMap.KEY_PREFIX_LENGTH + (withIp ? 16 : 0);
            BucketKeys.putPrefix(nodeKey, 0, ordinal, version);
            if (withIp)
            {
                final byte[] ip = new byte[16];
                random.nextBytes(ip);
                nodeKey.putBytes(ShardMap.KEY_PREFIX_LENGTH, ip);
                System.arraycopy(ip, 0, clientKey, ShardMap.KEY_PREFIX_LENGTH, 16);
            }
            for (final int shards : new int[] {1, 3, 5, 64})
            {
                final long nodeHash = KeyHash.hash(nodeKey, 0, length);
                assertEquals(ShardMap.shardOf(nodeHash, shards), ShardMap.keyShard(clientKey, length, ordinal, version, shards),
                    "key " + i + " over " + shards + " shards");
            }
        }
    }
}
