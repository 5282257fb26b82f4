package dev.limiter.cli.pilot;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.limiter.server.testing.ClosingTogether;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import dev.limiter.server.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A compressed pilot (phases of 2 s) against a real 3-node cluster in this JVM: pilot.json has every
 * exit criterion with a verdict, enforcement lowered the backend's 5xx against the baseline, and the
 * two drills that kill node processes are reported as not run, with the reason (these nodes are this
 * JVM). Timing verdicts (p99s) are the operator's: asserted only to be there.
 */
@Timeout(120)
class PilotCommandTest
{
    private static final String TOKEN = "pilot-test-token-0123456789abcdef";
    private static final int RAFT_OFFSET = 100;

    @TempDir
    Path dir;

    private final List<StoreServer> nodes = new ArrayList<>();

    @AfterEach
    void stop()
    {
        ClosingTogether.close(nodes);
    }

    @Test
    void aCompressedPilotJudgesEveryCriterionAndEnforcementLowersTheBackends5xx() throws Exception
    {
        final int[] ports = ClusterPorts.free(3, RAFT_OFFSET);
        final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
        for (int i = 0; i < 3; i++)
        {
            peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", ports[i]));
        }
        final Path policies = Files.writeString(dir.resolve("policies.json"),
            "{\"version\":1,\"policies\":[],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":100000,\"owner\":\"t\"}}");
        final List<String> data = new ArrayList<>();
        final List<String> admin = new ArrayList<>();
        for (final String id : peers.keySet())
        {
            final StoreServer node = new StoreServer(new ServerConfig().host("127.0.0.1").port(peers.get(id).getPort())
                .adminPort(0).adminToken(TOKEN).shards(2).ioThreads(1).policiesFile(policies).nodeId(id).peers(peers)
                .raftPortOffset(RAFT_OFFSET)
                .electionTimeoutMillis(300).dataDir(dir.resolve(id))).start();
            nodes.add(node);
            data.add("127.0.0.1:" + node.port());
            admin.add("127.0.0.1:" + node.adminPort());
        }
        Await.until("a leader", Duration.ofSeconds(20),
            () -> nodes.stream().anyMatch(n -> n.replication().canDecide()));
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final Path trace = Path.of("..", "config", "pilot-trace.json").toAbsolutePath();
        final int status = PilotCommand.run(new String[] {"--server", String.join(",", data), "--admin",
            String.join(",", admin), "--minutes", "0.2", "--out", "out", "--trace", trace.toString()},
            new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
            Map.of("LIMITER_ADMIN_TOKEN", TOKEN), dir);
        final String said = out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8);

        final JsonObject pilot = JsonParser.parseString(Files.readString(dir.resolve("out/pilot.json")))
            .getAsJsonObject();
        assertEquals("", pilot.get("abortedBecause").getAsString(), said);
        assertEquals(status, pilot.get("exitCode").getAsInt(), said);
        assertTrue(Files.readString(dir.resolve("out/summary.html")).contains("Exit criteria"));
        final Map<String, JsonObject> criteria = new LinkedHashMap<>();
        for (final JsonElement c : pilot.getAsJsonArray("criteria"))
        {
            criteria.put(c.getAsJsonObject().get("id").getAsString(), c.getAsJsonObject());
        }
        assertEquals(Set.of("shadow-first", "enabled-for-few-tenants-first", "drill-spike", "drill-store-failure",
            "drill-leader-kill", "drill-rollback", "drill-hot-tenant", "latency-targets-hold",
            "false-rejections-have-reasons", "fallback-budgets-work", "policies-owners-versions-audit",
            "benefit-backend-5xx-lower"), criteria.keySet());
        boolean everyAcceptable = true;
        for (final JsonObject c : criteria.values())
        {
            final String verdict = c.get("verdict").getAsString();
            assertTrue(Set.of("PASS", "FAIL", "NOT_RUN").contains(verdict), c.toString());
            assertFalse(c.get("detail").getAsString().isBlank(), "every verdict says what it rests on: " + c);
            everyAcceptable &= !verdict.equals("FAIL");
        }
        assertEquals(everyAcceptable ? 0 : 1, status, "exit 0 only when no criterion failed: " + said);
        // What the nodes decide (not how fast) is asserted.
        for (final String id : List.of("shadow-first", "enabled-for-few-tenants-first",
            "policies-owners-versions-audit", "drill-rollback", "benefit-backend-5xx-lower"))
        {
            assertEquals("PASS", criteria.get(id).get("verdict").getAsString(), criteria.get(id) + "\n" + said);
        }
        // These nodes are this JVM: the drills that kill node processes refuse them, and say so.
        for (final String id : List.of("drill-leader-kill", "drill-store-failure", "fallback-budgets-work"))
        {
            assertEquals("NOT_RUN", criteria.get(id).get("verdict").getAsString(), criteria.get(id).toString());
            assertTrue(criteria.get(id).get("detail").getAsString()
                .contains("is not a node started from the command line"),
                criteria.get(id).toString());
        }
        final JsonObject total = pilot.getAsJsonObject("beforeAfter").getAsJsonObject("total");
        final double before = total.getAsJsonObject("before").get("backend5xxRate").getAsDouble();
        final double after = total.getAsJsonObject("after").get("backend5xxRate").getAsDouble();
        assertTrue(before > 0.05 && after < before, "5xx before " + before + ", after " + after);
        assertTrue(pilot.getAsJsonObject("beforeAfter").getAsJsonObject("byTenant").has("noisy-corp"));
        assertTrue(pilot.getAsJsonObject("falseRejections").has("candidates"), pilot.get("falseRejections").toString());
        assertTrue(said.contains("limiter pilot: exit criteria"), said);
    }
}
