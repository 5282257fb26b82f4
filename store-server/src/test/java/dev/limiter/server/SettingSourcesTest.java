package dev.limiter.server;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A node's settings from flags, LIMITER_* variables and a settings file: one loader, one set of checks. */
class SettingSourcesTest
{
    @TempDir
    Path dir;

    private Path file(final String... lines) throws IOException
    {
        return Files.writeString(dir.resolve("node.properties"), String.join("\n", lines) + "\n");
    }

    private static String refused(final String[] args, final Map<String, String> env)
    {
        return assertThrows(IllegalArgumentException.class, () -> ServerMain.load(args, env)).getMessage();
    }

    @Test
    void aFlagWinsOverTheEnvironmentWhichWinsOverTheFileWhichWinsOverTheDefault() throws IOException
    {
        final String file = file("shards=2", "io-threads=3", "max-connections=7", "shard-threads=true").toString();
        final Map<String, String> env = Map.of("LIMITER_SHARDS", "3", "LIMITER_IO_THREADS", "5");
        final NodeConfig all = ServerMain.load(new String[] {"--config", file, "--shards", "4"}, env);
        assertEquals(4, all.shards().count(), "the flag");
        assertEquals(5, all.dataPort().ioThreads(), "the environment over the file");
        assertEquals(7, all.dataPort().maxConnections(), "the file");
        assertTrue(all.shards().ownThreads(), "a boolean option from the file");
        assertEquals(DataPortConfig.Defaults.MAX_FRAME_BYTES, all.dataPort().maxFrameBytes(), "the default");
        assertEquals(3, ServerMain.load(new String[] {"--config=" + file}, env).shards().count());
        assertEquals(2, ServerMain.load(new String[] {"--config", file}, Map.of()).shards().count());
        assertEquals(2, ServerMain.load(new String[0], Map.of("LIMITER_CONFIG", file)).shards().count(),
            "the file named by $LIMITER_CONFIG");
        assertEquals(ShardConfig.Defaults.COUNT, ServerMain.load(new String[0], Map.of()).shards().count());
        assertEquals(2, ServerMain.load(new String[] {"--config", file}, Map.of("LIMITER_SHARDS",
            " ")).shards().count(), "a variable set to blanks is unset");
    }

    @Test
    void aValueThatIsNotANumberIsRefusedAlikeFromEachSourceNamingTheSourceAndKey() throws IOException
    {
        final String fromFlag = refused(new String[] {"--shards", "four"}, Map.of());
        assertEquals("Invalid value for option '--shards': 'four' is not an int", fromFlag);
        assertEquals(fromFlag + " [--shards was set by environment variable LIMITER_SHARDS]",
            refused(new String[0], Map.of("LIMITER_SHARDS", "four")));
        final Path file = file("shards = four");
        assertEquals(fromFlag + " [--shards was set by settings file " + file + ", key shards]",
            refused(new String[] {"--config", file.toString()}, Map.of()));
    }

    @Test
    void aValueOutOfRangeGetsTheRecordsOwnMessageFromEachSourceWithWhereItCameFrom() throws IOException
    {
        final String peers = "n1=127.0.0.1:7401,n2=127.0.0.1:7402,n3=127.0.0.1:7403";
        final String fromFlag = refused(new String[] {"--node-id", "n1", "--peers", peers, "--election-timeout-ms",
            "20"}, Map.of());
        assertTrue(fromFlag.startsWith("--election-timeout-ms must be 150 (the default) to "), fromFlag);
        assertEquals(fromFlag + " [--election-timeout-ms was set by environment variable LIMITER_ELECTION_TIMEOUT_MS]",
            refused(new String[] {"--node-id", "n1", "--peers", peers}, Map.of("LIMITER_ELECTION_TIMEOUT_MS", "20")));
        final Path file = file("node-id=n1", "peers=" + peers, "election-timeout-ms=20");
        assertEquals(fromFlag + " [--election-timeout-ms was set by settings file " + file
            + ", key election-timeout-ms]", refused(new String[] {"--config", file.toString()}, Map.of()));
    }

    @Test
    void anUnknownKeyInTheFileIsRefusedAndAnUnknownVariableIsReported() throws IOException
    {
        final Path file = file("shard=4", "peers=");
        assertEquals("settings file " + file
            + ": unknown key(s) [shard]; the keys are the server's options without '--' "
            + "(./limiter server --help), e.g. shards, peers, data-dir", refused(new String[] {"--config",
            file.toString()}, Map.of()));
        assertEquals("--config " + dir.resolve("absent") + ": cannot read it as a settings file (java.nio.file." +
            "NoSuchFileException: " + dir.resolve("absent")
                + "); it holds lines of key=value, the keys being the server's " +
            "options without '--', e.g. shards=4",
            refused(new String[] {"--config", dir.resolve("absent").toString()}, Map.of()));
        final SettingSources sources = SettingSources.of(new String[0],
            Map.of("LIMITER_SHARD", "4", "LIMITER_SHARDS", "4", "LIMITER_JAVA_OPTS", "-Xmx1g", "PATH", "/bin"));
        assertEquals(Set.of("LIMITER_SHARD"), sources.checkNames(new CommandLine(new ServerMain()).getCommandSpec()));
    }
}
