package dev.limiter.bench;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.envoy.GatewayMetrics;
import dev.limiter.envoy.RlsServer;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.region.RegionConfig;
import dev.limiter.server.StoreServer;
import dev.limiter.server.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The operations assets in {@code ops/} checked with the real Prometheus tools: the alert rules by
 * {@code promtool check rules} and their unit tests by {@code promtool test rules}, and every
 * query of the Grafana dashboard evaluated by a real Prometheus that scrapes a running 3-node
 * cluster and an Envoy gateway (its SDK's meters). Needs Debian's {@code prometheus} package:
 * skipped with a message where it is missing, failed when {@code LIMITER_REQUIRE_PROMETHEUS=1}
 * (as {@code .ci/run} sets it, after installing the package).
 */
@Timeout(180)
class PrometheusAssetsTest
{
    private static final Path OPS = Path.of("..", "ops").toAbsolutePath().normalize();
    private static final Path RULES = OPS.resolve("prometheus/limiter-rules.yml");
    private static final String TOKEN = "0123456789abcdef0123456789abcdef";
    private static final int RAFT_OFFSET = 100;
    /** What Grafana puts for $__rate_interval at this scrape interval (four scrapes). */
    private static final String RATE_INTERVAL = "15s";
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"tight\",\"selector\":{\"route\":\"/tight\"},\"rate\":1,\"period\":\"3600s\",\"burst\":2,\"owner\":\"t\"}," +
        "{\"id\":\"tight-shadow\",\"selector\":{\"route\":\"/tight\"},\"rate\":1,\"period\":\"3600s\",\"burst\":1,\"mode\":\"SHADOW\",\"owner\":\"t\"}," +
        "{\"id\":\"global-orders\",\"selector\":{\"route\":\"/global\"},\"rate\":100,\"scope\":\"GLOBAL\",\"owner\":\"t\",\"regional\":{}}," +
        "{\"id\":\"edge\",\"selector\":{\"envoy\":{\"domain\":\"edge\",\"entries\":[{\"key\":\"remote_address\"}]}},\"rate\":100,\"owner\":\"t\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1000,\"owner\":\"t\"}}";

    @TempDir
    Path dir;

    private final List<AutoCloseable> running = new ArrayList<>();
    private Process prometheus;

    @AfterEach
    void stopAll() throws Exception
    {
        if (prometheus != null)
        {
            prometheus.destroy();
            if (!prometheus.waitFor(10, TimeUnit.SECONDS))
            {
                prometheus.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        for (int i = running.size() - 1; i >= 0; i--)
        {
            running.get(i).close();
        }
    }

    /** A Prometheus tool on the PATH, or the test is skipped (failed, when CI requires the tools). */
    private static Path tool(final String name)
    {
        for (final String entry : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(File.pathSeparator))
        {
            final Path candidate = Path.of(entry, name);
            if (Files.isExecutable(candidate))
            {
                return candidate;
            }
        }
        final String missing = name + " is not installed: the Prometheus checks of ops/ need Debian's prometheus package " +
            "(apt-get install prometheus); .ci/run installs it";
        if ("1".equals(System.getenv("LIMITER_REQUIRE_PROMETHEUS")))
        {
            fail(missing + " (LIMITER_REQUIRE_PROMETHEUS=1)");
        }
        Assumptions.abort(missing);
        return null;
    }

    private static String run(final Path workDir, final String... command) throws Exception
    {
        final Process process = new ProcessBuilder(command).directory(workDir.toFile()).redirectErrorStream(true).start();
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), String.join(" ", command) + " did not finish");
        assertEquals(0, process.exitValue(), String.join(" ", command) + ":\n" + output);
        return output;
    }

    @Test
    void theAlertRulesPassPromtoolsCheckAndTheirOwnUnitTests() throws Exception
    {
        final Path promtool = tool("promtool");
        assertTrue(run(OPS.resolve("prometheus"), promtool.toString(), "check", "rules", "limiter-rules.yml").contains("SUCCESS: 36 rules found"));
        assertTrue(run(OPS.resolve("prometheus"), promtool.toString(), "test", "rules", "limiter-rules.test.yml").contains("SUCCESS"));
        run(OPS.resolve("prometheus"), promtool.toString(), "check", "config", "prometheus-local.yml");
    }

    @Test
    void everyDashboardQueryAnswersFromAPrometheusScrapingARunningCluster() throws Exception
    {
        final Path prometheusBinary = tool("prometheus");
        final List<String> admin = startCluster();
        final RlsServer rls = RlsServer.start(LimiterClient.builder().endpoints(admin.stream().map(a -> a.split("\\|")[0])
            .toArray(String[]::new)), 1, new InetSocketAddress("127.0.0.1", 0), Duration.ofMillis(200), false);
        running.add(rls);
        final LimiterClient client = rls.client();
        final GatewayMetrics gateway = GatewayMetrics.serve(new InetSocketAddress("127.0.0.1", 0), rls.gateway(), client);
        running.add(gateway);
        traffic(client);

        final int port = freePort();
        final Path config = dir.resolve("prometheus.yml");
        Files.writeString(config, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - " + RULES + "\n" +
            "scrape_configs:\n  - job_name: limiter\n    static_configs:\n      - targets: [" +
            String.join(", ", admin.stream().map(a -> "\"" + a.split("\\|")[1] + "\"").toList()) + "]\n" +
            "  - job_name: limiter-sdk\n    static_configs:\n      - targets: [\"127.0.0.1:" + gateway.port() + "\"]\n");
        prometheus = new ProcessBuilder(prometheusBinary.toString(), "--config.file=" + config, "--storage.tsdb.path=" + dir.resolve("tsdb"),
            "--web.listen-address=127.0.0.1:" + port, "--log.level=warn")
            .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
        final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        final String base = "http://127.0.0.1:" + port;

        // Every target scraped, then scraped again after more traffic: rates over RATE_INTERVAL have data.
        awaitQuery(http, base, "count(up == 1) == 4", Duration.ofSeconds(60));
        traffic(client);

        final JsonObject dashboard = JsonParser.parseString(Files.readString(OPS.resolve("grafana/limiter-dashboard.json"))).getAsJsonObject();
        final Map<String, String> queries = new LinkedHashMap<>();
        for (final JsonElement panel : dashboard.getAsJsonArray("panels"))
        {
            final JsonObject p = panel.getAsJsonObject();
            if (p.has("targets"))
            {
                for (final JsonElement target : p.getAsJsonArray("targets"))
                {
                    queries.put(p.get("title").getAsString() + " / " + target.getAsJsonObject().get("refId").getAsString(),
                        target.getAsJsonObject().get("expr").getAsString().replace("$__rate_interval", RATE_INTERVAL));
                }
            }
        }
        assertTrue(queries.size() >= 20, "the dashboard's queries were found: " + queries.size());
        // Until every query has data (scrapes every second; it took a fixed 6 s sleep before), then as asserted.
        final List<List<String>> empty = new ArrayList<>(List.of(List.of()));
        Await.until("every dashboard query with data and every rule evaluated", Duration.ofSeconds(30), () ->
        {
            empty.set(0, emptyQueries(http, base, queries));
            return empty.get(0).isEmpty() && rulesEvaluated(http, base);
        }, () -> "no data yet: " + empty.get(0));
        assertEquals(List.of(), emptyQueries(http, base, queries),
            "dashboard queries with no data from a running cluster (a metric or label that does not exist?)");

        // The rules loaded, and each evaluates without error against real series.
        final JsonObject rules = get(http, base + "/api/v1/rules").getAsJsonObject("data");
        int count = 0;
        for (final JsonElement group : rules.getAsJsonArray("groups"))
        {
            for (final JsonElement rule : group.getAsJsonObject().getAsJsonArray("rules"))
            {
                count++;
                assertEquals("ok", rule.getAsJsonObject().get("health").getAsString(), rule.toString());
            }
        }
        assertEquals(36, count);
    }

    /** Decisions of every kind the dashboard shows: allowed, denied, shadow would-deny, Envoy's, and one the SDK decides locally. */
    private static void traffic(final LimiterClient client)
    {
        for (int i = 0; i < 50; i++)
        {
            client.acquireBlocking(Descriptor.of("tenant-" + i, "/orders"), 1);
        }
        for (int i = 0; i < 4; i++)
        {
            client.acquireBlocking(Descriptor.of("acme", "/tight"), 1);
        }
        for (int i = 0; i < 10; i++)
        {
            client.acquireBlocking(Descriptor.of("acme", "/global"), 1); // a regional policy: the region panels
        }
        client.acquireBlocking(Descriptor.builder().method("ENVOY").route("/envoy/_edge/_remote%5Faddress/_10.0.0.1").tenant("e:10.0.0.1").build(), 1);
        // No node answers within a microsecond (mostly: a quick answer may beat the SDK's timer): the SDK decides on its own.
        boolean local = false;
        for (int i = 0; i < 1_000 && !local; i++)
        {
            local = client.acquire(Descriptor.of("acme", "/orders"), 1, Duration.ofNanos(1_000)).join().degraded();
        }
        assertTrue(local, "a decision the SDK made on its own");
    }

    /** Three members, each with its admin port: "data host:port|admin host:port". */
    private List<String> startCluster() throws Exception
    {
        final int[] ports = ClusterPorts.free(3, RAFT_OFFSET);
        final int unreachable = ClusterPorts.free(1, 0)[0]; // nothing listens there
        final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
        for (int i = 0; i < 3; i++)
        {
            peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", ports[i]));
        }
        final Path policies = Files.writeString(dir.resolve("policies.json"), POLICIES);
        final List<String> addresses = new ArrayList<>();
        for (final String id : peers.keySet())
        {
            final StoreServer node = new StoreServer(new ServerConfig().host("127.0.0.1").port(peers.get(id).getPort()).adminPort(0)
                .adminToken(TOKEN).shards(2).ioThreads(1).policiesFile(policies).nodeId(id).peers(peers).raftPortOffset(RAFT_OFFSET)
                // A region whose other region is never reached: the region panels have data, its report age is NaN.
                .region(RegionConfig.parse("eu", "us=127.0.0.1:" + unreachable, TOKEN, 250, 50))
                .dataDir(dir.resolve(id))).start();
            running.add(node);
            addresses.add("127.0.0.1:" + node.port() + "|127.0.0.1:" + node.adminPort());
        }
        Await.until("a leader", Duration.ofSeconds(30),
            () -> running.stream().anyMatch(n -> n instanceof StoreServer s && s.replication().canDecide()));
        return addresses;
    }

    private static String queryUrl(final String base, final String promql)
    {
        return base + "/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8);
    }

    /** The dashboard's queries ("title / refId: expr") that Prometheus answers with no series now. */
    private static List<String> emptyQueries(final HttpClient http, final String base,
        final Map<String, String> queries)
    {
        final List<String> empty = new ArrayList<>();
        try
        {
            for (final Map.Entry<String, String> query : queries.entrySet())
            {
                if (query(http, base, query.getValue()).isEmpty())
                {
                    empty.add(query.getKey() + ": " + query.getValue());
                }
            }
        }
        catch (final Exception e)
        {
            throw new AssertionError("Prometheus did not answer a dashboard query: " + e, e);
        }
        return empty;
    }

    /** Whether Prometheus has evaluated every rule at least once (a rule's health is "unknown" before). */
    private static boolean rulesEvaluated(final HttpClient http, final String base)
    {
        try
        {
            final JsonObject rules = get(http, base + "/api/v1/rules").getAsJsonObject("data");
            for (final JsonElement group : rules.getAsJsonArray("groups"))
            {
                for (final JsonElement rule : group.getAsJsonObject().getAsJsonArray("rules"))
                {
                    if (rule.getAsJsonObject().get("health").getAsString().equals("unknown"))
                    {
                        return false;
                    }
                }
            }
            return true;
        }
        catch (final Exception e)
        {
            throw new AssertionError("Prometheus did not answer /api/v1/rules: " + e, e);
        }
    }

    private static JsonArray query(final HttpClient http, final String base, final String promql) throws Exception
    {
        return result(promql, get(http, queryUrl(base, promql)));
    }

    private static JsonArray result(final String promql, final JsonObject answer)
    {
        assertEquals("success", answer.get("status").getAsString(), promql + ": " + answer);
        return answer.getAsJsonObject("data").getAsJsonArray("result");
    }

    private static void awaitQuery(final HttpClient http, final String base, final String promql, final Duration timeout) throws Exception
    {
        final long end = System.nanoTime() + timeout.toNanos();
        final String url = queryUrl(base, promql);
        while (true)
        {
            try
            {
                final HttpResponse<String> response = send(http, url);
                // 503 while Prometheus opens its storage: it listens before it is ready.
                if (response.statusCode() != 503 && !result(promql, parse(url, response)).isEmpty())
                {
                    return;
                }
            }
            catch (final IOException notUpYet)
            {
                // Prometheus still starting
            }
            assertTrue(System.nanoTime() < end, "Prometheus never answered '" + promql + "'");
            Thread.sleep(250);
        }
    }

    private static HttpResponse<String> send(final HttpClient http, final String url) throws Exception
    {
        return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonObject get(final HttpClient http, final String url) throws Exception
    {
        return parse(url, send(http, url));
    }

    private static JsonObject parse(final String url, final HttpResponse<String> response)
    {
        assertEquals(200, response.statusCode(), url + ": " + response.body());
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
    }
}
