package dev.limiter.cli;

import dev.limiter.server.StoreServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
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
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code ./limiter report --prometheus URL} against a real Prometheus scraping a real node (Debian's
 * prometheus package: skipped where it is missing, failed when {@code LIMITER_REQUIRE_PROMETHEUS=1}),
 * and Prometheus answering an error.
 */
@Timeout(60)
class ReportPrometheusTest
{
    private static final Path PROMETHEUS = Path.of("/usr/bin/prometheus");

    @TempDir
    Path dir;

    private Process prometheus;
    private StoreServer node;

    @AfterEach
    void stop() throws Exception
    {
        if (prometheus != null)
        {
            prometheus.destroy();
            if (!prometheus.waitFor(10, TimeUnit.SECONDS))
            {
                prometheus.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        if (node != null)
        {
            node.close();
        }
    }

    private PolicyCommandTest.Result report(final String... args)
    {
        return CommandRun.capture(ReportCommand::run, args, Map.of(AdminClient.TOKEN_ENVIRONMENT,
            ReportCommandTest.TOKEN), dir);
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return probe.getLocalPort();
        }
    }

    @Test
    void shouldChartTheSameDecisionsFromAPrometheusScrapingTheNode() throws Exception
    {
        if (!Files.isExecutable(PROMETHEUS))
        {
            final String missing = PROMETHEUS + " is not installed (Debian's prometheus package; .ci/run installs it)";
            if ("1".equals(System.getenv("LIMITER_REQUIRE_PROMETHEUS")))
            {
                fail(missing + " (LIMITER_REQUIRE_PROMETHEUS=1)");
            }
            Assumptions.abort(missing);
        }
        node = ReportCommandTest.startNode(dir.resolve("node"));
        final String admin = "127.0.0.1:" + node.adminPort();
        final int port = freePort();
        final Path config = dir.resolve("prometheus.yml");
        Files.writeString(config, "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: limiter\n" +
            "    static_configs:\n      - targets: [\"" + admin + "\"]\n");
        prometheus = new ProcessBuilder(PROMETHEUS.toString(), "--config.file=" + config,
            "--storage.tsdb.path=" + dir.resolve("tsdb"), "--web.listen-address=127.0.0.1:" + port, "--log.level=warn")
            .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
        final String base = "http://127.0.0.1:" + port;
        // Scraped once before the traffic (the counters' 0), then until it saw all 90 decisions.
        awaitQuery(base, "limiter_decisions_total{policy=\"orders-write\",outcome=\"allowed\"} == 0");
        ReportCommandTest.decide(node, 80, 10);
        awaitQuery(base, "sum(limiter_decisions_total{policy=\"orders-write\"}) == 90");

        final Path out = dir.resolve("report.html");
        final PolicyCommandTest.Result result = report("--since", "2m", "--out", out.toString(), "--admin", admin,
            "--prometheus", base);

        assertEquals(0, result.status(), result.toString());
        final String html = Files.readString(out, StandardCharsets.UTF_8);
        assertTrue(html.contains("Prometheus at " + base + " (query_range)"), "the source is named");
        assertTrue(html.contains("<figure class=\"chart\" id=\"policy-1\"><figcaption>orders-write: "), "its chart");
        // Differences of the counters at the steps' ends: exact.
        final long allowed = number(html, "orders-write", 0);
        final long denied = number(html, "orders-write", 1);
        assertEquals(60, allowed, "allowed");
        assertEquals(30, denied, "denied");
        assertTrue(html.contains("Prometheus holds no limiter_false_rejections_total"), "false rejections not made up");
        assertTrue(html.contains("Decision latency p99 per node"), "p99 from the quantile gauge");
        final HeadlessChromium.Page page = HeadlessChromium.load(out, dir);
        assertTrue(page.dom().contains("data-charts-ok=\"true\""), page.dom().substring(0, 300));
        assertEquals(java.util.List.of(), page.console());
    }

    @Test
    void shouldFailNamingWhatPrometheusAnsweredWhenItRefusesOrIsNotThere() throws Exception
    {
        try (FakeAdminServer fake = FakeAdminServer.start().answer(422,
            "{\"status\":\"error\",\"errorType\":\"execution\"," +
                "\"error\":\"query processing would load too many samples\"}"))
        {
            node = ReportCommandTest.startNode(dir.resolve("node"));
            final String admin = "127.0.0.1:" + node.adminPort();
            final PolicyCommandTest.Result refused = report("--out", dir.resolve("r.html").toString(), "--admin", admin,
                "--prometheus", "http://" + fake.address());
            assertEquals(1, refused.status(), refused.toString());
            PolicyCommandTest.assertOneLineFailure(refused, "limiter report: Prometheus at http://" + fake.address() +
                " answered HTTP 422: execution: query processing would load too many samples");

            final int down = freePort();
            final PolicyCommandTest.Result gone = report("--out", dir.resolve("r.html").toString(), "--admin", admin,
                "--prometheus", "127.0.0.1:" + down);
            assertEquals(1, gone.status(), gone.toString());
            PolicyCommandTest.assertOneLineFailure(gone, "limiter report: Prometheus: http://127.0.0.1:" + down
                + " refused the connection");
            assertFalse(Files.exists(dir.resolve("r.html")));
        }
    }

    private static long number(final String html, final String policy, final int column)
    {
        return Long.parseLong(ReportCommandTest.cell(html, policy, column).replace(",", ""));
    }

    private static void awaitQuery(final String base, final String promql) throws Exception
    {
        final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        final URI uri = URI.create(base + "/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
        final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true)
        {
            try
            {
                final HttpResponse<String> response = http.send(HttpRequest.newBuilder(uri)
                    .timeout(Duration.ofSeconds(5))
                    .build(), HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 200 && !response.body().contains("\"result\":[]"))
                {
                    return;
                }
            }
            catch (final IOException notUpYet)
            {
                // Prometheus still starting
            }
            assertTrue(System.nanoTime() < end, "Prometheus never answered '" + promql + "'");
            Thread.sleep(200);
        }
    }
}
