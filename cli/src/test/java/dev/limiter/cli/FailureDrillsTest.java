package dev.limiter.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClusterPorts;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ./limiter drill leader-kill store-failure} against three node processes: the drills SIGKILL
 * real processes and start them again. What a node decided is asserted (bounds, refusals, the audit
 * record, the restart); how many milliseconds things took is the operator's verdict, not asserted
 * here, as four JVMs share two cores while the build runs.
 */
@Timeout(300)
class FailureDrillsTest
{
    private static final String TOKEN = PolicyCommandTest.TOKEN;

    @TempDir
    Path dir;

    private final List<Process> started = new ArrayList<>();
    private final List<Path> dataDirs = new ArrayList<>();

    @AfterEach
    void stopEveryNode() throws Exception
    {
        final List<ProcessHandle> all = new ArrayList<>();
        started.forEach(p -> all.add(p.toHandle()));
        for (final Path data : dataDirs)
        {
            // Nodes the drill restarted.
            final Path pid = data.resolve("node.pid");
            if (Files.exists(pid))
            {
                ProcessHandle.of(Long.parseLong(Files.readString(pid).trim())).ifPresent(all::add);
            }
        }
        for (final ProcessHandle process : all)
        {
            process.destroyForcibly();
        }
        for (final ProcessHandle process : all)
        {
            process.onExit().get(20, TimeUnit.SECONDS);
        }
    }

    @Test
    void leaderKillAndStoreFailureStopRealNodesKeepTheirBoundsAndBringThemBack() throws Exception
    {
        final int[] data = ClusterPorts.free(3, 100);
        final int[] admin = ClusterPorts.free(3, 100);
        final StringBuilder peers = new StringBuilder();
        for (int i = 0; i < 3; i++)
        {
            peers.append(i > 0 ? "," : "").append("n").append(i + 1).append("=127.0.0.1:").append(data[i]);
        }
        final Path policies = Files.writeString(dir.resolve("policies.json"),
            "{\"version\":1,\"policies\":[],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":10000,\"owner\":\"t\"}}");
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final List<String> servers = new ArrayList<>();
        final List<String> admins = new ArrayList<>();
        for (int i = 0; i < 3; i++)
        {
            final Path node = Files.createDirectories(dir.resolve("n" + (i + 1)));
            dataDirs.add(node);
            final ProcessBuilder builder = new ProcessBuilder(java, "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), "dev.limiter.server.ServerMain",
                "--node-id", "n" + (i + 1), "--peers", peers.toString(), "--admin-port", Integer.toString(admin[i]),
                "--data-dir", node.toString(), "--policies", policies.toString(), "--shards", "1", "--io-threads", "1")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(node.resolve("node.log").toFile()));
            builder.environment().put(AdminClient.TOKEN_ENVIRONMENT, TOKEN);
            started.add(builder.start());
            servers.add("127.0.0.1:" + data[i]);
            admins.add("127.0.0.1:" + admin[i]);
        }
        // Every node must answer (a status has a 1 s timeout, which a starting JVM on a busy build host can miss) and one lead.
        final List<List<FailureDrills.Status>> seen = new ArrayList<>(List.of(List.of()));
        Await.until("every node answering and one leading", Duration.ofSeconds(60), () ->
        {
            final List<FailureDrills.Status> statuses = servers.stream().map(FailureDrills::status).toList();
            seen.set(0, statuses);
            return statuses.stream().allMatch(s -> s != null)
                && statuses.stream().anyMatch(s -> s.role().equals("LEADER"));
        }, () -> seen.get(0).toString());
        final long[] pidsBefore = seen.get(0).stream().mapToLong(FailureDrills.Status::pid).toArray();

        final PolicyCommandTest.Result result = CommandRun.capture(DrillCommand::run, new String[] {"leader-kill", "store-failure",
            "--server", String.join(",", servers), "--admin", String.join(",", admins), "--seconds", "2", "--json"},
            Map.of(AdminClient.TOKEN_ENVIRONMENT, TOKEN), dir);
        System.out.println(result.out()); // the evidence, in the test's report
        final String[] lines = result.out().split("\n");
        assertEquals(2, lines.length, result.toString());

        final String kill = lines[0];
        assertTrue(kill.startsWith("{\"drill\":\"leader-kill\""), kill);
        assertTrue(number(kill, "strictGrantedByNodes") > 0, kill);
        assertTrue(number(kill, "strictGrantedByNodes") <= number(kill, "strictBound"), "STRICT never over-admits: " + kill);
        assertEquals(0, number(kill, "strictGrantedLocally"), kill);
        assertTrue(number(kill, "fastGrantedByNodes") <= number(kill, "fastBound"), "FAST within its bound: " + kill);
        assertEquals(0, number(kill, "failedCalls"), kill);
        assertTrue(number(kill, "nodeDecidedAgainAfterMs") >= 0, "a node decided again after the kill: " + kill);
        assertTrue(number(kill, "freshClientNodeDecisionAfterMs") >= 0, "and for a client made after it: " + kill);
        assertTrue(number(kill, "restartedNodeRejoinedAfterMs") >= 0, "the killed node came back: " + kill);
        assertEquals(150, number(kill, "electionTimeoutMs"), "the cluster's election timeout, beside the failover it measured: " + kill);

        final String store = lines[1];
        assertTrue(store.startsWith("{\"drill\":\"store-failure\""), store);
        assertTrue(number(store, "openGrantedLocally") > 0, "the fail-open route went on locally: " + store);
        assertTrue(number(store, "openGrantedLocally") <= number(store, "emergencyBudget"), "within its emergency budget: " + store);
        assertEquals(0, number(store, "closedGrantedDuringOutage"), store);
        assertTrue(number(store, "closedRefusedClusterUnavailable") > 0, store);
        assertTrue(number(store, "firstNodeAnswerAfterRestartMs") >= 0, "the nodes came back: " + store);
        assertTrue(number(store, "grantedInFirstSecondBack") <= 120, "no pent-up burst: " + store);
        assertTrue(store.contains("\"degradedWindowAudited\":true"), store);
        assertEquals(0, number(store, "failedCalls"), store);
        final boolean bothPassed = kill.contains("\"verdict\":\"PASS\"") && store.contains("\"verdict\":\"PASS\"");
        assertEquals(bothPassed ? 0 : 1, result.status(), "exit 0 only when both passed: " + result);

        // Every node was restarted by the drills (new processes, pids in node.pid) and serves again.
        for (int i = 0; i < 3; i++)
        {
            final FailureDrills.Status now = FailureDrills.statusWithin(servers.get(i), TimeUnit.SECONDS.toNanos(30));
            assertTrue(now != null, "node " + servers.get(i) + " answers within 30 s of the drills");
            assertNotEquals(pidsBefore[i], now.pid(), "a new process");
            assertEquals(Long.toString(now.pid()), Files.readString(dataDirs.get(i).resolve("node.pid")).trim());
        }
        // And the drills deleted their policies (through the leader: the node asked may apply it a moment later).
        assertTrue(!result.err().contains("could not delete"), result.err());
        final PolicyCommandTest.Result[] list = new PolicyCommandTest.Result[1];
        Await.until(() -> "the drills' policies deleted: " + list[0].out(), Duration.ofSeconds(5), () ->
            !(list[0] = CommandRun.capture(PolicyCommand::run,
                new String[] {"list", "--admin", String.join(",", admins)},
                Map.of(AdminClient.TOKEN_ENVIRONMENT, TOKEN), dir)).out().contains("drill-"));
    }

    @Test
    void aNodeThatIsNotOnThisMachineIsNeverStopped()
    {
        final AdminClient.Failure refused = org.junit.jupiter.api.Assertions.assertThrows(AdminClient.Failure.class,
            () -> NodeProcess.of("192.0.2.7:7401", ProcessHandle.current().pid()));
        assertTrue(refused.getMessage().contains("is not on this machine's loopback"), refused.getMessage());
    }

    @Test
    void aProcessThatIsNotANodeStartedFromTheCommandLineIsNeverStopped()
    {
        // This JVM (a test runner) holds no node's command line: refused, and it lives on.
        final AdminClient.Failure refused = org.junit.jupiter.api.Assertions.assertThrows(AdminClient.Failure.class,
            () -> NodeProcess.of("127.0.0.1:7401", ProcessHandle.current().pid()));
        assertTrue(refused.getMessage().contains("is not a node started from the command line"), refused.getMessage());
    }

    /**
     * A drill verdict's evidence {@code name}: a number, or the number a text such as "12 (burst 10 + ...)"
     * starts with.
     */
    static long number(final String verdict, final String name)
    {
        final JsonElement value =
            JsonParser.parseString(verdict).getAsJsonObject().getAsJsonObject("evidence").get(name);
        assertTrue(value != null && value.isJsonPrimitive(), name + " in " + verdict);
        return Long.parseLong(value.getAsString().split(" ", 2)[0]);
    }
}
