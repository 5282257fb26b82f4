package dev.limiter.server;

import dev.limiter.server.table.BucketTable;

/**
 * The shards: how many, what each holds, and which threads own them.
 *
 * @param count                 shards; shard i is owned by event loop i mod the data port's io threads
 * @param maxBucketsPerShard    buckets one shard holds before it evicts full ones
 * @param keyArenaBytesPerShard off-heap bytes for bucket keys, per shard
 * @param ownThreads            every shard on a dedicated thread instead of an event loop (not in a cluster)
 */
public record ShardConfig(int count, int maxBucketsPerShard, int keyArenaBytesPerShard, boolean ownThreads)
{
    /** The shards' defaults, with their units in their names. */
    public static final class Defaults
    {
        /** As many as event loops ({@link DataPortConfig.Defaults#IO_THREADS}): no frame is handed between loops. */
        public static final int COUNT = DataPortConfig.Defaults.IO_THREADS;
        /** 2^20 slots of 32 bytes (32 MiB) per shard at the 0.7 load factor. */
        public static final int MAX_BUCKETS_PER_SHARD = 734_003;
        /** Average 32 bytes of key per bucket. */
        public static final int KEY_ARENA_BYTES_PER_SHARD = MAX_BUCKETS_PER_SHARD * 32;

        private Defaults()
        {
        }
    }

    public ShardConfig
    {
        Settings.require(count >= 1 && count <= 64, "shards must be 1 to 64, was " + count);
        Settings.require(maxBucketsPerShard >= 1 && maxBucketsPerShard <= BucketTable.MAX_BUCKETS,
            "max buckets per shard must be 1 to " + BucketTable.MAX_BUCKETS + " (use more shards beyond that), was " +
                maxBucketsPerShard);
        Settings.require(keyArenaBytesPerShard >= BucketTable.MAX_KEY_LENGTH,
            "key arena bytes per shard must be at least " + BucketTable.MAX_KEY_LENGTH + ", was " +
                keyArenaBytesPerShard);
    }
}
