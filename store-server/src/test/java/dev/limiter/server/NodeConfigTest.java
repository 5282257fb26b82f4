package dev.limiter.server;

import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.net.TlsClientAuth;
import dev.limiter.server.region.RegionConfig;
import dev.limiter.server.table.BucketTable;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each group of a node's settings refuses what it cannot run with, saying what to change; the cluster makes Raft's. */
class NodeConfigTest
{
    private static final Map<String, InetSocketAddress> THREE =
        RaftNodeConfig.parsePeers("n1=127.0.0.1:7401,n2=127.0.0.1:7402,n3=127.0.0.1:7403");

    private static void refused(final String message, final Executable build)
    {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build);
        assertEquals(message, e.getMessage());
    }

    @Nested
    class DataPort
    {
        private DataPortConfig port(final String host, final int port, final int ioThreads, final int maxFrameBytes,
            final int maxConnections, final long idleMillis, final long frameMillis, final boolean epoll,
            final boolean uring)
        {
            return new DataPortConfig(host, port, ioThreads, maxFrameBytes, maxConnections, idleMillis, frameMillis,
                epoll, uring);
        }

        @Test
        void shouldKeepInRangeValues()
        {
            final DataPortConfig config = port("0.0.0.0", 0, 1, 1024, 1, 100, 100, true, true);
            assertEquals("0.0.0.0", config.host());
            assertTrue(config.preferIoUring());
            port("127.0.0.1", 65535, 256, 64 << 20, 1_000_000, 86_400_000L, 600_000, false, false);
        }

        @Test
        void shouldRefuseEachValueOutOfRangeNamingIt()
        {
            refused("host must not be empty", () -> port(" ", 1, 1, 1024, 1, 100, 100, true, false));
            refused("host must not be empty", () -> port(null, 1, 1, 1024, 1, 100, 100, true, false));
            refused("port must be 0 (any free port) to 65535, was 65536",
                () -> port("h", 65536, 1, 1024, 1, 100, 100, true, false));
            refused("port must be 0 (any free port) to 65535, was -1",
                () -> port("h", -1, 1, 1024, 1, 100, 100, true, false));
            refused("io threads must be 1 to 256, was 0", () -> port("h", 1, 0, 1024, 1, 100, 100, true, false));
            refused("io threads must be 1 to 256, was 257", () -> port("h", 1, 257, 1024, 1, 100, 100, true, false));
            refused("--io-uring and --nio ask for two different transports: keep one of them",
                () -> port("h", 1, 1, 1024, 1, 100, 100, false, true));
            refused("max frame bytes must be 1024 to 64 MiB, was 1023",
                () -> port("h", 1, 1, 1023, 1, 100, 100, true, false));
            refused("max connections must be 1 to 1000000, was 0",
                () -> port("h", 1, 1, 1024, 0, 100, 100, true, false));
            refused("idle timeout must be 100 ms to 1 day, was 99 ms",
                () -> port("h", 1, 1, 1024, 1, 99, 100, true, false));
            refused("frame timeout must be 100 ms to 10 minutes, was 600001 ms",
                () -> port("h", 1, 1, 1024, 1, 100, 600_001, true, false));
        }
    }

    @Nested
    class Admin
    {
        @Test
        void shouldTakeMinusOneAsOffAndZeroAsAnyFreePort()
        {
            assertFalse(new AdminConfig(-1, null, 1, 100).enabled());
            assertTrue(new AdminConfig(0, null, 10_000, 86_400_000L).enabled());
        }

        @Test
        void shouldRefuseEachValueOutOfRangeNamingIt()
        {
            refused("admin port must be -1 (off), 0 (any free port) or up to 65535, was -2",
                () -> new AdminConfig(-2, null, 1, 100));
            refused("admin max connections must be 1 to 10000, was 10001", () -> new AdminConfig(0, null, 10_001, 100));
            refused("admin idle timeout must be 100 ms to 1 day, was 99 ms", () -> new AdminConfig(0, null, 1, 99));
        }

        @Test
        void shouldKeepTheTokenOutOfItsText()
        {
            final String text = new AdminConfig(0, "secret-token-0123456789", 1, 100).toString();
            assertFalse(text.contains("secret"), text);
            assertTrue(text.contains("token=set"), text);
        }
    }

    @Nested
    class Shards
    {
        @Test
        void shouldRefuseEachValueOutOfRangeNamingIt()
        {
            refused("shards must be 1 to 64, was 65", () -> new ShardConfig(65, 1, BucketTable.MAX_KEY_LENGTH, false));
            refused("shards must be 1 to 64, was 0", () -> new ShardConfig(0, 1, BucketTable.MAX_KEY_LENGTH, false));
            refused("max buckets per shard must be 1 to " + BucketTable.MAX_BUCKETS +
                " (use more shards beyond that), was 0",
                () -> new ShardConfig(1, 0, BucketTable.MAX_KEY_LENGTH, false));
            refused("key arena bytes per shard must be at least " + BucketTable.MAX_KEY_LENGTH + ", was 1",
                () -> new ShardConfig(1, 1, 1, false));
            assertEquals(64, new ShardConfig(64, BucketTable.MAX_BUCKETS, BucketTable.MAX_KEY_LENGTH, true).count());
        }
    }

    @Nested
    class Tls
    {
        @TempDir
        Path dir;

        private Path file(final String name) throws IOException
        {
            return Files.writeString(dir.resolve(name), "pem");
        }

        @Test
        void shouldBeOffWithoutACertificate()
        {
            assertFalse(TlsConfig.OFF.enabled());
            assertEquals(TlsClientAuth.NONE, TlsConfig.OFF.clientAuth());
        }

        @Test
        void shouldRefuseFilesThatDoNotGoTogetherOrCannotBeRead() throws IOException
        {
            final Path cert = file("cert.pem");
            final Path key = file("key.pem");
            final Path ca = file("ca.pem");
            refused("--tls-cert and --tls-key go together: the certificate and its private key",
                () -> new TlsConfig(cert, null, null, TlsClientAuth.NONE, 0));
            refused("--tls-ca needs --tls-cert and --tls-key: TLS is on only with a certificate",
                () -> new TlsConfig(null, null, ca, TlsClientAuth.NONE, 0));
            refused("--tls-client-auth require needs --tls-ca: the CAs client certificates must come from",
                () -> new TlsConfig(cert, key, null, TlsClientAuth.REQUIRE, 0));
            final Path missing = dir.resolve("missing.pem");
            refused("TLS file " + missing + " does not exist or is not readable",
                () -> new TlsConfig(cert, missing, null, TlsClientAuth.NONE, 0));
            assertTrue(new TlsConfig(cert, key, ca, TlsClientAuth.OPTIONAL, 100).enabled());
        }

        @Test
        void shouldRefuseAReloadIntervalThatIsNeitherZeroNorOneHundredMillisecondsToADay()
        {
            refused("--tls-reload-ms must be 0 (never) or 100 ms to 1 day, was 50 ms",
                () -> new TlsConfig(null, null, null, TlsClientAuth.NONE, 50));
            refused("--tls-reload-ms must be 0 (never) or 100 ms to 1 day, was 86400001 ms",
                () -> new TlsConfig(null, null, null, TlsClientAuth.NONE, 86_400_001L));
            assertEquals(0, new TlsConfig(null, null, null, TlsClientAuth.NONE, 0).reloadMillis());
        }

        @Test
        void shouldReadAClientAuthModeInAnyCaseAndRefuseAnother()
        {
            assertEquals(TlsClientAuth.REQUIRE, TlsConfig.clientAuth(" Require "));
            refused("--tls-client-auth 'maybe' is not none, optional or require", () -> TlsConfig.clientAuth("maybe"));
        }
    }

    @Nested
    class Cluster
    {
        private ClusterConfig member(final String nodeId, final int offset, final long lingerMicros,
            final long snapshotEvery, final long electionMillis, final int segmentBytes, final int uncommittedBytes)
        {
            return new ClusterConfig(nodeId, THREE, 1, offset, false, lingerMicros, snapshotEvery, electionMillis, true,
                ClusterConfig.LogFormat.COMPACT, segmentBytes, uncommittedBytes);
        }

        private ClusterConfig single(final String nodeId, final int groups, final long electionMillis,
            final boolean memoryFirst)
        {
            return new ClusterConfig(nodeId, Map.of(), groups, 100, false, 20_000, 10, electionMillis, memoryFirst,
                ClusterConfig.LogFormat.COMPACT, 1024, 1);
        }

        @Test
        void shouldRefuseClusterSettingsOnASingleNodeNamingTheFlagTheyNeed()
        {
            assertFalse(ClusterConfig.SINGLE_NODE.clustered());
            refused("--memory-first sets how a cluster's Raft log is synced: give --node-id and --peers, or leave it " +
                "out on a single node", () -> single(null, 1, 150, true));
            refused("--node-id needs --peers (the members of the cluster, this node included)",
                () -> single("n1", 1, 150, false));
            refused("--raft-groups needs --peers: a single node replicates nothing", () -> single(null, 3, 150, false));
            refused("--election-timeout-ms needs --peers: a single node holds no elections",
                () -> single(null, 1, 500, false));
        }

        @Test
        void shouldRefuseAMemberSettingOutOfRangeNamingIt()
        {
            refused("--node-id must be one of the ids in --peers ([n1, n2, n3]), was n4",
                () -> member("n4", 100, 0, 1, 150, 1024, 1));
            refused("raft port offset must be 1 to 9999, was 0", () -> member("n1", 0, 0, 1, 150, 1024, 1));
            refused("--fast-linger-ms must be 0 to 100 ms, was 100.001 ms",
                () -> member("n1", 100, 100_001, 1, 150, 1024, 1));
            refused("--fast-linger-ms must be 0 to 100 ms, was -0.5 ms", () -> new ClusterConfig(null, Map.of(), 1, 100,
                false, -500, 1, 150, false, ClusterConfig.LogFormat.COMPACT, 1024, 1)); // on a single node too
            refused("--snapshot-every must be at least 1 log entry, was 0",
                () -> member("n1", 100, 0, 0, 150, 1024, 1));
            refused("--election-timeout-ms must be 150 (the default) to 1000 ms, was 149",
                () -> member("n1", 100, 0, 1, 149, 1024, 1));
            refused("--election-timeout-ms must be 150 (the default) to 1000 ms, was 1001",
                () -> member("n1", 100, 0, 1, 1001, 1024, 1));
            refused("a Raft log segment must be at least 1 KiB, was 512 bytes",
                () -> member("n1", 100, 0, 1, 150, 512, 1));
            refused("a shard's uncommitted bytes bound must be at least 1, was 0",
                () -> member("n1", 100, 0, 1, 150, 1024, 0));
            refused("peer n3: port 60000 + raft offset 9999 exceeds 65535",
                () -> new ClusterConfig("n1", RaftNodeConfig.parsePeers("n1=h:7401,n3=h:60000"), 1, 9999, false, 0, 1,
                    150, false, ClusterConfig.LogFormat.COMPACT, 1024, 1));
        }

        @Test
        void shouldBuildRaftSettingsWithTheMembersRaftAddressesAndItsLog()
        {
            final ClusterConfig cluster = new ClusterConfig("n2", THREE, 2, 100, true, 5_000, 20, 400, true,
                ClusterConfig.LogFormat.CLASSIC, 4096, 64);
            final RaftNodeConfig raft = cluster.raftNodeConfig(Path.of("data", "n2", "raft"), 2_000).validate();
            assertEquals("n2", raft.nodeId());
            assertEquals(List.of("n1", "n2", "n3"), List.copyOf(raft.peers().keySet()), "the members, in order");
            assertEquals(7502, raft.peers().get("n2").getPort(), "the data port plus the offset");
            assertEquals("127.0.0.1", raft.peers().get("n3").getHostString());
            assertEquals(Path.of("data", "n2", "raft"), raft.storageDir());
            assertEquals("buckets", raft.groupName());
            assertTrue(raft.joining());
            assertEquals(20, raft.snapshotEveryEntries());
            assertTrue(raft.memoryFirst());
            assertEquals(Duration.ofMillis(400), raft.electionTimeoutMin());
            assertEquals(4096, raft.logSegmentBytes());
            assertEquals(2_000, raft.prefaceTimeoutMillis());
            assertFalse(raft.tls(), "the caller adds the TLS managers");
            assertEquals(5_000_000, cluster.fastLingerNanos());
            assertEquals(7401, THREE.get("n1").getPort(), "the data-plane addresses are left as they were");
        }

        @Test
        void shouldHaveNoRaftSettingsOnASingleNode()
        {
            assertThrows(IllegalStateException.class,
                () -> ClusterConfig.SINGLE_NODE.raftNodeConfig(Path.of("x"), 100));
        }

        @Test
        void shouldKeepItsOwnCopyOfThePeers()
        {
            final Map<String, InetSocketAddress> peers = new LinkedHashMap<>(THREE);
            final ClusterConfig cluster = new ClusterConfig("n1", peers, 1, 100, false, 0, 1, 150, false,
                ClusterConfig.LogFormat.COMPACT, 1024, 1);
            peers.clear();
            assertEquals(3, cluster.peers().size());
            assertThrows(UnsupportedOperationException.class, () -> cluster.peers().clear());
        }
    }

    @Nested
    class Regions
    {
        @Test
        void shouldRefuseABadNameAMissingTokenOrASlotOutOfRange()
        {
            refused("--region: a name of 1 to 32 lowercase letters, digits and '-', was 'EU'",
                () -> new RegionConfig("EU", Map.of(), null, 250, 50));
            refused("the region exchange needs a token of 16 to 256 characters [A-Za-z0-9._~+/=-], the same in every " +
                "region (--region-token or $LIMITER_REGION_TOKEN; not the admin token)",
                () -> new RegionConfig("eu", Map.of("us", List.of("h:1")), "short", 250, 50));
            refused("--region-slot-ms: 20 to 60000 and more than twice the guard (50 ms), was 100",
                () -> new RegionConfig("eu", Map.of(), null, 100, 50));
            assertEquals(List.of("eu"), new RegionConfig("eu", Map.of("eu", List.of("h:1")), null, 250, 50).regions(),
                "no token needed with no other region");
        }

        @Test
        void shouldGuardASlotWithFiftyMillisecondsOrAFifthOfAShortOne()
        {
            assertEquals(50, RegionConfig.guardFor(250));
            assertEquals(20, RegionConfig.guardFor(100));
        }
    }

    @Nested
    class Storage
    {
        @Test
        void shouldDefaultToADirectoryNamedForTheNode()
        {
            assertEquals(Path.of("data", "n1"), StorageConfig.Defaults.dataDir("n1"));
            assertEquals(Path.of("data", "node"), StorageConfig.Defaults.dataDir(null));
            assertEquals(Path.of("d", "raft"), new StorageConfig(Path.of("d"), null).raftDir());
            refused("a data directory is required (--data-dir)", () -> new StorageConfig(null, null));
        }
    }

    @Nested
    class Node
    {
        private final DataPortConfig dataPort = new DataPortConfig("127.0.0.1", 0, 1, 1024, 1, 100, 100, true, false);
        private final AdminConfig admin = new AdminConfig(-1, null, 1, 100);
        private final StorageConfig storage = new StorageConfig(Path.of("d"), null);

        private ClusterConfig member(final int groups)
        {
            return new ClusterConfig("n1", THREE, groups, 100, false, 0, 1, 150, false, ClusterConfig.LogFormat.COMPACT,
                1024, 1);
        }

        private NodeConfig node(final ShardConfig shards, final ClusterConfig cluster, final TlsConfig tls)
        {
            return new NodeConfig(dataPort, admin, shards, cluster, tls, null, storage);
        }

        @Test
        void shouldRefuseMoreRaftGroupsThanShardsOrNone()
        {
            final ShardConfig two = new ShardConfig(2, 1, BucketTable.MAX_KEY_LENGTH, false);
            refused("--raft-groups must be 1 to --shards (2): each group owns at least one shard; was 3",
                () -> node(two, member(3), TlsConfig.OFF));
            refused("--raft-groups must be 1 to --shards (2): each group owns at least one shard; was 0",
                () -> node(two, member(0), TlsConfig.OFF));
            assertEquals(2, node(two, member(2), TlsConfig.OFF).cluster().raftGroups());
        }

        @Test
        void shouldRefuseShardThreadsInACluster()
        {
            refused("--shard-threads is not supported in a cluster: shards live on the event loops",
                () -> node(new ShardConfig(1, 1, BucketTable.MAX_KEY_LENGTH, true), member(1), TlsConfig.OFF));
            assertTrue(node(new ShardConfig(1, 1, BucketTable.MAX_KEY_LENGTH, true), ClusterConfig.SINGLE_NODE,
                TlsConfig.OFF).shards().ownThreads());
        }

        @Test
        void shouldRefuseAClusterWithTlsButNoCa(@TempDir final Path dir) throws IOException
        {
            final Path cert = Files.writeString(dir.resolve("cert.pem"), "pem");
            final TlsConfig noCa = new TlsConfig(cert, cert, null, TlsClientAuth.NONE, 0);
            final ShardConfig one = new ShardConfig(1, 1, BucketTable.MAX_KEY_LENGTH, false);
            refused("a cluster with TLS needs --tls-ca: members verify each other's certificates on the Raft port " +
                "(mutual TLS)", () -> node(one, member(1), noCa));
            assertTrue(node(one, ClusterConfig.SINGLE_NODE, noCa).tls().enabled(), "a single node needs no CA");
        }

        @Test
        void shouldBuildRaftSettingsUnderTheDataDirectoryWithTheFrameTimeoutAsThePrefaceTimeout()
        {
            final NodeConfig node = node(new ShardConfig(1, 1, BucketTable.MAX_KEY_LENGTH, false), member(1),
                TlsConfig.OFF);
            final RaftNodeConfig raft = node.raftNodeConfig();
            assertEquals(Path.of("d", "raft"), raft.storageDir());
            assertEquals(100, raft.prefaceTimeoutMillis());
            assertEquals("n1", node.nodeName());
            assertNull(node.region());
        }
    }
}
