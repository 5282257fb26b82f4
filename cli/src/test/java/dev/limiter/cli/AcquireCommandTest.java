package dev.limiter.cli;

import dev.limiter.server.DelayingProxy;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code ./limiter acquire} says who decided: a node (exit 0), or the SDK on its own because no node answered (exit 1). */
@Timeout(60)
class AcquireCommandTest
{
    @TempDir
    Path dir;

    private record Run(int status, String out, String err)
    {
    }

    private static Run acquire(final String... args)
    {
        final PrintStream out = System.out;
        final PrintStream err = System.err;
        final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
        try
        {
            final int status = new CommandLine(new AcquireCommand()).execute(args);
            return new Run(status, stdout.toString(StandardCharsets.UTF_8), stderr.toString(StandardCharsets.UTF_8));
        }
        finally
        {
            System.setOut(out);
            System.setErr(err);
        }
    }

    @Test
    void aNodesDecisionExitsZeroAndTheSdksOwnSaysSoAndExitsOne() throws Exception
    {
        try (StoreServer node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(Path.of("..", "config", "policies.json")).dataDir(dir)).start();
             DelayingProxy slow = new DelayingProxy(node.port()))
        {
            final Run decided = acquire("--server", "127.0.0.1:" + node.port(), "--tenant", "acme", "--route", "/v1/orders/42");
            assertEquals(0, decided.status(), decided.toString());
            assertTrue(decided.out().contains("\"allowed\":true") && decided.out().contains("\"decidedBy\":\"node\""), decided.out());

            // Answers held back 600 ms: the policy set still arrives at start, but the call's 200 ms deadline passes first.
            slow.delayAnswers(600);
            final Run local = acquire("--server", "127.0.0.1:" + slow.port(), "--tenant", "acme", "--route", "/v1/orders/42",
                "--deadline-ms", "200");
            assertEquals(1, local.status(), local.toString());
            assertTrue(local.out().contains("\"decidedBy\":\"sdk\""), local.out());
            assertTrue(local.err().contains("no node of") && local.err().contains("the SDK's own"), local.err());
        }
    }
}
