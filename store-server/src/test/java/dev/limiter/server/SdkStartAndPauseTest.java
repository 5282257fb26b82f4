package dev.limiter.server;

import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.PausingClient;
import dev.limiter.server.testing.ProcessCluster;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The SDK a service can trust at its edges: a fresh client is ready when build() returns, and
 * pauses of the service's own JVM are not taken for store failures.
 */
@Timeout(180)
class SdkStartAndPauseTest
{
    @TempDir
    Path dir;

    @Test
    void aFreshClientAnswersItsFirstSecondOfCallsFromTheNodeInTenOfTenStarts() throws Exception
    {
        try (StoreServer server = TestNode.start(dir, new ManualClock(SECOND), 2))
        {
            for (int start = 0; start < 10; start++)
            {
                try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port())
                    .deadline(Duration.ofMillis(200)).build())
                {
                    final long[] counts = PausingClient.hammer(client, SECOND, 0, () -> { });
                    assertEquals(0, counts[0], "start " + start + ": calls that failed in the first second");
                    assertEquals(0, counts[1], "start " + start + ": calls decided by the SDK itself in the first second");
                    assertTrue(counts[2] > 100, "start " + start + ": only " + counts[2] + " calls");
                }
            }
        }
    }

    @Test
    void fullGcsOfTheClientsJvmDoNotMakeDecisionsLocalOrOpenTheCircuit() throws Exception
    {
        // The node and the client in processes of their own, the client with a one-threaded collector:
        // its full collections stop the client only, as with a service and a store on different machines
        // (a parallel collector would take both cores of this machine from the node too).
        try (ProcessCluster cluster = new ProcessCluster(dir, 1))
        {
            final String node = cluster.awaitLeader(null);
            final String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            final Process client = new ProcessBuilder(javaBin, "-XX:+UseSerialGC", "-Xmx1g", "-cp", System.getProperty("java.class.path"),
                PausingClient.class.getName(), "127.0.0.1:" + cluster.port(node), "6", "200")
                .redirectErrorStream(true).start();
            final String output = new String(client.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertTrue(client.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), output);
            final String result = output.lines().filter(l -> l.startsWith("RESULT ")).findFirst().orElseThrow(() -> new AssertionError(output));
            System.out.println("full GCs: " + result);
            assertTrue(number(result, "pauses") > 5, "the client's JVM paused: " + result);
            assertTrue(number(result, "node") > 1000, result);
            assertEquals(0, number(result, "errors"), "calls that failed: " + result);
            // Pauses never open the circuit and never count against the store: a local decision is put
            // down to this side (pausedTimeouts) when this process stood still while the call waited; nearly
            // always there is none, the answers that arrived meanwhile being read once the process runs
            // again. The deadline is 200 ms, as in the service this was first seen in (63% of decisions
            // local then). A call the node itself answers late is the store's failure and rightly counted
            // so: on two cores the node shares one with everything else while the client collects on the
            // other, and in one CI run of the whole suite 2 calls of 11,398 were (at 50 ms, about one run
            // in two had one, and once three in a row opened the circuit). Those may be 1 in 2,000 at most.
            final long local = number(result, "local");
            final long unexplained = local - number(result, "pausedTimeouts");
            assertTrue(unexplained >= 0 && unexplained * 2000 <= number(result, "node"),
                "local decisions not put down to this side's pauses: " + result + "\n" + output);
            assertTrue(local * 1000 <= number(result, "node"), "calls decided by the SDK itself: " + result);
            assertTrue(result.contains("circuitOpened=false"), "the circuit opened: " + result);
            assertEquals(0, number(result, "windows"), "an outage window was reported (the circuit opened): " + result);
        }
    }

    private static long number(final String result, final String name)
    {
        final java.util.regex.Matcher m = java.util.regex.Pattern.compile(name + "=(\\d+)").matcher(result);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }
}
