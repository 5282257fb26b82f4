package dev.limiter.cli;

import dev.limiter.server.testing.DelayingProxy;
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
        return run(new AcquireCommand(), args);
    }

    private static Run run(final Object command, final String... args)
    {
        final PrintStream out = System.out;
        final PrintStream err = System.err;
        final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
        try
        {
            final int status = new CommandLine(command).execute(args);
            return new Run(status, stdout.toString(StandardCharsets.UTF_8), stderr.toString(StandardCharsets.UTF_8));
        }
        finally
        {
            System.setOut(out);
            System.setErr(err);
        }
    }

    @Test
    void aLeaseTakenWithAcquireIsPrintedAndGivenBackWithRelease() throws Exception
    {
        try (StoreServer node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(Path.of("..", "config", "policies.json")).dataDir(dir)).start())
        {
            final String server = "127.0.0.1:" + node.port();
            final String[] export = {"--server", server, "--tenant", "globex", "--route", "/v1/exports"};
            final String[] ids = new String[4];
            for (int i = 0; i < 4; i++)
            {
                final Run taken = acquire(concat(export, "--lease"));
                assertEquals(0, taken.status(), taken.toString());
                ids[i] = taken.out().trim();
                assertTrue(ids[i].startsWith("L1."), taken.out());
            }
            final Run full = acquire(concat(export, "--lease"));
            assertEquals(3, full.status(), "4 exports running: " + full);
            assertTrue(full.err().contains("\"allowed\":false") && full.err().contains("the request was denied"), full.err());

            final Run released = run(new ReleaseCommand(), "--server", server, "--lease", ids[2]);
            assertEquals(0, released.status(), released.toString());
            final Run plain = acquire(export);
            assertEquals(0, plain.status(), plain.toString());
            assertTrue(plain.out().contains("\"allowed\":true") && plain.out().contains("\"lease\":\"L1."), plain.out());
            assertTrue(plain.err().contains("./limiter release --lease L1."), plain.err());

            final Run noLease = acquire("--server", server, "--tenant", "globex", "--route", "/v1/orders/1", "--lease");
            assertEquals(3, noLease.status(), noLease.toString());
            assertTrue(noLease.err().contains("is not a concurrency limit"), noLease.err());
            final Run bad = run(new ReleaseCommand(), "--server", server, "--lease", "not-a-lease");
            assertEquals(2, bad.status(), bad.toString());
            assertTrue(bad.err().contains("not a lease id"), bad.err());
        }
    }

    private static String[] concat(final String[] args, final String... more)
    {
        final String[] all = java.util.Arrays.copyOf(args, args.length + more.length);
        System.arraycopy(more, 0, all, args.length, more.length);
        return all;
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
