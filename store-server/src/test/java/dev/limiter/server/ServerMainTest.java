package dev.limiter.server;

import dev.limiter.server.net.TlsClientAuth;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code ./limiter server}'s flags fill the settings records; nothing is started. */
class ServerMainTest
{
    @TempDir
    Path dir;

    private static NodeConfig flags(final String... args)
    {
        final ServerMain main = new ServerMain();
        new CommandLine(main).setCaseInsensitiveEnumValuesAllowed(true).parseArgs(args);
        return main.nodeConfig();
    }

    @Test
    void shouldMakeTheSameSettingsWithNoFlagsAsServerConfigDoesWithNone()
    {
        final NodeConfig none = flags();
        assertEquals(new ServerConfig().build(), none);
        assertEquals(7400, none.dataPort().port());
        assertEquals(7480, none.admin().port());
        assertEquals(Path.of("data", "node"), none.storage().dataDir());
        assertFalse(none.clustered());
        assertNull(none.region());
    }

    @Test
    void shouldPutEachFlagOfASingleNodeInItsGroup() throws IOException
    {
        final Path cert = Files.writeString(dir.resolve("cert.pem"), "pem");
        final Path key = Files.writeString(dir.resolve("key.pem"), "pem");
        final Path ca = Files.writeString(dir.resolve("ca.pem"), "pem");
        final NodeConfig config = flags("--host", "0.0.0.0", "--port", "7500", "--admin-port", "-1",
            "--policies", "p.json", "--shards", "4", "--io-threads", "3", "--max-buckets-per-shard", "1000",
            "--key-arena-bytes-per-shard", "64000",
            "--max-frame-bytes", "2048", "--shard-threads", "--nio", "--admin-token", "tok", "--data-dir", "d",
            "--max-connections", "5", "--idle-timeout-ms", "1000", "--frame-timeout-ms", "2000",
            "--admin-max-connections", "6", "--admin-idle-timeout-ms", "3000",
            "--tls-cert", cert.toString(), "--tls-key", key.toString(), "--tls-ca", ca.toString(),
            "--tls-client-auth", "Optional", "--tls-reload-ms", "0", "--fast-linger-ms", "0.5");
        assertEquals(new DataPortConfig("0.0.0.0", 7500, 3, 2048, 5, 1000, 2000, false, false), config.dataPort());
        assertEquals(new AdminConfig(-1, "tok", 6, 3000), config.admin());
        assertEquals(new ShardConfig(4, 1000, 64000, true), config.shards());
        assertEquals(new TlsConfig(cert, key, ca, TlsClientAuth.OPTIONAL, 0), config.tls());
        assertEquals(new StorageConfig(Path.of("d"), Path.of("p.json")), config.storage());
        assertEquals(500, config.cluster().fastLingerMicros(), "milliseconds with a fraction, kept in microseconds");
    }

    @Test
    void shouldPutTheClusterFlagsInTheClusterGroupAndServeThePortThePeersKnow()
    {
        final NodeConfig config = flags("--port", "9999", "--node-id", "n2", "--peers",
            "n1=127.0.0.1:7401,n2=127.0.0.1:7402", "--raft-groups", "2", "--shards", "2", "--raft-port-offset", "50",
            "--snapshot-every", "20", "--election-timeout-ms", "300", "--memory-first", "--log-format", "CLASSIC",
            "--join", "--io-uring");
        final ClusterConfig cluster = config.cluster();
        assertTrue(config.clustered());
        assertEquals("n2", cluster.nodeId());
        assertEquals(List.of("n1", "n2"), List.copyOf(cluster.peers().keySet()));
        assertEquals(2, cluster.raftGroups());
        assertEquals(50, cluster.raftPortOffset());
        assertEquals(20, cluster.snapshotEveryEntries());
        assertEquals(300, cluster.electionTimeoutMillis());
        assertTrue(cluster.memoryFirst());
        assertEquals(ClusterConfig.LogFormat.CLASSIC, cluster.logFormat());
        assertTrue(cluster.joining());
        assertEquals(ClusterConfig.Defaults.FAST_LINGER_MICROS, cluster.fastLingerMicros());
        assertEquals(7402, config.dataPort().port(), "--port gives way to the node's address in --peers");
        assertTrue(config.dataPort().preferIoUring());
        assertEquals(Path.of("data", "n2"), config.storage().dataDir());
        assertEquals(7452, config.raftNodeConfig().peers().get("n2").getPort());
    }

    @Test
    void shouldSayWhichFlagToChange()
    {
        assertEquals("--tls-client-auth 'maybe' is not none, optional or require",
            assertThrows(IllegalArgumentException.class, () -> flags("--tls-client-auth", "maybe")).getMessage());
        assertEquals("--raft-groups needs --peers: a single node replicates nothing",
            assertThrows(IllegalArgumentException.class, () -> flags("--raft-groups", "2")).getMessage());
        assertEquals("--fast-linger-ms must be 0 to 100 ms, was 100.5 ms",
            assertThrows(IllegalArgumentException.class, () -> flags("--fast-linger-ms", "100.5")).getMessage());
        assertEquals("--node-id must be one of the ids in --peers ([n1]), was n9",
            assertThrows(IllegalArgumentException.class, () -> flags("--node-id", "n9", "--peers", "n1=h:1"))
                .getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> flags("--region", "EU")).getMessage()
            .startsWith("--region: a name of 1 to 32 lowercase letters"));
    }

    @Test
    void shouldReadTheRegionFlagsWithAGuardOfAFifthOfAShortSlot()
    {
        final NodeConfig config = flags("--region", "eu", "--region-peers", "us=10.0.0.1:7480",
            "--region-token", "0123456789abcdef", "--region-slot-ms", "100");
        assertEquals("eu", config.region().region());
        assertEquals(List.of("10.0.0.1:7480"), config.region().peers().get("us"));
        assertEquals(100, config.region().slotMillis());
        assertEquals(20, config.region().guardMillis());
    }
}
