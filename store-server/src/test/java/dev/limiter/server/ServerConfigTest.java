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
        final IllegalArgumentException tooMany = assertThrows(IllegalArgumentException.class, () -> member(2, 3).validate());
        assertTrue(tooMany.getMessage().contains("--raft-groups must be 1 to --shards (2)") && tooMany.getMessage().contains("was 3"),
            tooMany.getMessage());
        final IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> member(2, 0).validate());
        assertTrue(none.getMessage().contains("was 0"), none.getMessage());
        assertEquals(3, member(3, 3).validate().raftGroups());
    }

    @Test
    void aFastLingerOutsideZeroToAHundredMillisecondsIsRefusedNamingTheRange()
    {
        final IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
            () -> member(2, 1).fastLingerMicros(-500).validate());
        assertTrue(negative.getMessage().contains("--fast-linger-ms must be 0 to 100 ms") && negative.getMessage().contains("was -0.5 ms"),
            negative.getMessage());
        assertThrows(IllegalArgumentException.class, () -> member(2, 1).fastLingerMicros(100_001).validate());
        assertThrows(IllegalArgumentException.class, () -> new ServerConfig().fastLingerMicros(-1).validate(),
            "refused on a single node too, where it has nothing to do");
        assertEquals(0, member(2, 1).fastLingerMicros(0).validate().fastLingerMicros());
        assertEquals(ServerConfig.DEFAULT_FAST_LINGER_MICROS, member(2, 1).validate().fastLingerMicros());
    }

    @Test
    void aTlsReloadIntervalThatIsNeitherZeroNorOneHundredMillisecondsToADayIsRefusedNamingTheRange()
    {
        final IllegalArgumentException tooOften = assertThrows(IllegalArgumentException.class, () -> new ServerConfig().tlsReloadMillis(50).validate());
        assertTrue(tooOften.getMessage().contains("--tls-reload-ms must be 0 (never) or 100 ms to 1 day, was 50 ms"), tooOften.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ServerConfig().tlsReloadMillis(-1).validate());
        new ServerConfig().tlsReloadMillis(0).validate();
        new ServerConfig().tlsReloadMillis(100).validate();
    }

    @Test
    void ioUringAndNioTogetherAreRefusedSayingToKeepOne()
    {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new ServerConfig().preferIoUring(true).preferEpoll(false).validate());
        assertTrue(e.getMessage().contains("--io-uring and --nio") && e.getMessage().contains("keep one"), e.getMessage());
        assertTrue(new ServerConfig().preferIoUring(true).validate().preferIoUring());
    }

    @Test
    void raftGroupsOnASingleNodeAreRefused()
    {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new ServerConfig().shards(3).raftGroups(3).validate());
        assertTrue(e.getMessage().contains("--raft-groups needs --peers"), e.getMessage());
    }

    @Test
    void aSnapshotIntervalBelowOneEntryOrALogSegmentBelowOneKibIsRefused()
    {
        final IllegalArgumentException interval = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).snapshotEveryEntries(0).validate());
        assertTrue(interval.getMessage().contains("--snapshot-every must be at least 1 log entry, was 0"), interval.getMessage());
        final IllegalArgumentException segment = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).logSegmentBytes(512).validate());
        assertTrue(segment.getMessage().contains("at least 1 KiB, was 512 bytes"), segment.getMessage());
        assertEquals(20, member(1, 1).snapshotEveryEntries(20).logSegmentBytes(4096).validate().snapshotEveryEntries());
    }

    @Test
    void anUncommittedBytesBoundBelowOneIsRefused()
    {
        final IllegalArgumentException bound = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).maxUncommittedBytesPerShard(0).validate());
        assertTrue(bound.getMessage().contains("uncommitted bytes bound must be at least 1, was 0"), bound.getMessage());
        assertEquals(64, member(1, 1).maxUncommittedBytesPerShard(64).validate().maxUncommittedBytesPerShard());
    }

    @Test
    void memoryFirstIsAClusterSettingAndIsRefusedOnASingleNode()
    {
        final IllegalArgumentException single = assertThrows(IllegalArgumentException.class,
            () -> new ServerConfig().memoryFirst(true).validate());
        assertTrue(single.getMessage().contains("--memory-first sets how a cluster's Raft log is synced"), single.getMessage());
        assertTrue(member(1, 1).memoryFirst(true).validate().memoryFirst());
        assertFalse(member(1, 1).validate().memoryFirst(), "off unless asked for");
    }

    @Test
    void anElectionTimeoutBelowTheDefaultOrAboveOneSecondOrOnASingleNodeIsRefusedNamingTheRange()
    {
        final IllegalArgumentException low = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).electionTimeoutMillis(149).validate());
        assertTrue(low.getMessage().contains("--election-timeout-ms must be 150 (the default) to 1000 ms, was 149"), low.getMessage());
        final IllegalArgumentException high = assertThrows(IllegalArgumentException.class,
            () -> member(1, 1).electionTimeoutMillis(1001).validate());
        assertTrue(high.getMessage().contains("was 1001"), high.getMessage());
        final IllegalArgumentException single = assertThrows(IllegalArgumentException.class,
            () -> new ServerConfig().electionTimeoutMillis(500).validate());
        assertTrue(single.getMessage().contains("--election-timeout-ms needs --peers"), single.getMessage());
        assertEquals(150, member(1, 1).validate().electionTimeoutMillis());
        assertEquals(1000, member(1, 1).electionTimeoutMillis(1000).validate().electionTimeoutMillis());
    }
}
