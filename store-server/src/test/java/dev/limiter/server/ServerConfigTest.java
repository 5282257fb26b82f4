package dev.limiter.server;

import dev.limiter.raft.RaftNodeConfig;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad Raft group settings are refused before anything starts, saying what to change. */
class ServerConfigTest
{
    private static ServerConfig member(final int shards, final int groups)
    {
        return new ServerConfig().shards(shards).raftGroups(groups).nodeId("n1")
            .peers(RaftNodeConfig.parsePeers("n1=127.0.0.1:7401,n2=127.0.0.1:7402,n3=127.0.0.1:7403"));
    }

    @Test
    void moreRaftGroupsThanShardsOrNoneAtAllIsRefusedNamingTheRange()
    {
        final IllegalArgumentException tooMany =
            assertThrows(IllegalArgumentException.class, () -> member(2, 3).build());
        assertTrue(tooMany.getMessage().contains("--raft-groups must be 1 to --shards (2)") && tooMany.getMessage().contains("was 3"),
            tooMany.getMessage());
        final IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> member(2, 0).build());
        assertTrue(none.getMessage().contains("was 0"), none.getMessage());
        assertEquals(3, member(3, 3).build().cluster().raftGroups());
    }

    @Test
    void aFastLingerOutsideZeroToAHundredMillisecondsIsRefusedNamingTheRange()
    {
        final IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
            () -> member(2, 1).fastLingerMicros(-500).build());
        assertTrue(negative.getMessage().contains("--fast-linger-ms must be 0 to 100 ms") && negative.getMessage().contains("was -0.5 ms"),
            negative.getMessage());
        assertThrows(IllegalArgumentException.class, () -> member(2, 1).fastLingerMicros(100_001).build());
        assertThrows(IllegalArgumentException.class, () -> new ServerConfig().fastLingerMicros(-1).build(),
            "refused on a single node too, where it has nothing to do");
        assertEquals(0, member(2, 1).fastLingerMicros(0).build().cluster().fastLingerMicros());
        assertEquals(ClusterConfig.Defaults.FAST_LINGER_MICROS, member(2, 1).build().cluster().fastLingerMicros());
    }

    @Test
    void aTlsReloadIntervalThatIsNeitherZeroNorOneHundredMillisecondsToADayIsRefusedNamingTheRange()
    {
        final IllegalArgumentException tooOften =
            assertThrows(IllegalArgumentException.class, () -> new ServerConfig().tlsReloadMillis(50).build());
        assertTrue(tooOften.getMessage().contains("--tls-reload-ms must be 0 (never) or 100 ms to 1 day, was 50 ms"), tooOften.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ServerConfig().tlsReloadMillis(-1).build());
        new ServerConfig().tlsReloadMillis(0).build();
        new ServerConfig().tlsReloadMillis(100).build();
    }

    @Test
    void ioUringAndNioTogetherAreRefusedSayingToKeepOne()
    {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new ServerConfig().preferIoUring(true).preferEpoll(false).build());
        assertTrue(e.getMessage().contains("--io-uring and --nio") && e.getMessage().contains("keep one"), e.getMessage());
        assertTrue(new ServerConfig().preferIoUring(true).build().dataPort().preferIoUring());
    }

    @Test
    void raftGroupsOnASingleNodeAreRefused()
    {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new ServerConfig().shards(3).raftGroups(3).build());
        assertTrue(e.getMessage().contains("--raft-groups needs --peers"), e.getMessage());
    }

    @Test
    void aSnapshotIntervalBelowOneEntryOrALogSegmentBelowOneKibIsRefused()
    {
        final IllegalArgumentException interval = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).snapshotEveryEntries(0).build());
        assertTrue(interval.getMessage().contains("--snapshot-every must be at least 1 log entry, was 0"), interval.getMessage());
        final IllegalArgumentException segment = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).logSegmentBytes(512).build());
        assertTrue(segment.getMessage().contains("at least 1 KiB, was 512 bytes"), segment.getMessage());
        assertEquals(20,
            member(1, 1).snapshotEveryEntries(20).logSegmentBytes(4096).build().cluster().snapshotEveryEntries());
    }

    @Test
    void anUncommittedBytesBoundBelowOneIsRefused()
    {
        final IllegalArgumentException bound = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).maxUncommittedBytesPerShard(0).build());
        assertTrue(bound.getMessage().contains("uncommitted bytes bound must be at least 1, was 0"), bound.getMessage());
        assertEquals(64, member(1, 1).maxUncommittedBytesPerShard(64).build().cluster().maxUncommittedBytesPerShard());
    }

    @Test
    void memoryFirstIsAClusterSettingAndIsRefusedOnASingleNode()
    {
        final IllegalArgumentException single = assertThrows(IllegalArgumentException.class,
            () -> new ServerConfig().memoryFirst(true).build());
        assertTrue(single.getMessage().contains("--memory-first sets how a cluster's Raft log is synced"), single.getMessage());
        assertTrue(member(1, 1).memoryFirst(true).build().cluster().memoryFirst());
        assertFalse(member(1, 1).build().cluster().memoryFirst(), "off unless asked for");
    }

    @Test
    void anElectionTimeoutBelowTheDefaultOrAboveOneSecondOrOnASingleNodeIsRefusedNamingTheRange()
    {
        final IllegalArgumentException low = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).electionTimeoutMillis(149).build());
        assertTrue(low.getMessage().contains("--election-timeout-ms must be 150 (the default) to 1000 ms, was 149"), low.getMessage());
        final IllegalArgumentException high = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).electionTimeoutMillis(1001).build());
        assertTrue(high.getMessage().contains("was 1001"), high.getMessage());
        final IllegalArgumentException single = assertThrows(IllegalArgumentException.class,
            () -> new ServerConfig().electionTimeoutMillis(500).build());
        assertTrue(single.getMessage().contains("--election-timeout-ms needs --peers"), single.getMessage());
        assertEquals(150, member(1, 1).build().cluster().electionTimeoutMillis());
        assertEquals(1000, member(1, 1).electionTimeoutMillis(1000).build().cluster().electionTimeoutMillis());
    }
}
