package dev.limiter.cli;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ./limiter report} against a real node that decided requests: the page it writes, what a
 * headless chromium makes of it, the empty window, and bad input.
 */
@Timeout(60)
class ReportCommandTest
{
    static final String TOKEN = PolicyCommandTest.TOKEN;
    /** orders-write denies beyond a burst of 50; orders-strict, a shadow, would deny beyond 20. */
    static final String POLICIES = """
        {"version": 1,
         "defaultPolicy": {"id": "default", "rate": 10, "period": "1s", "burst": 20, "scope": "TENANT",
           "owner": "platform-team", "reason": "baseline"},
         "policies": [
           {"id": "orders-write", "selector": {"route": "/v1/orders/{id}", "method": "POST"}, "rate": 1, "period": "1s",
            "burst": 50, "scope": "TENANT", "owner": "orders-team", "reason": "order creation is expensive"},
           {"id": "orders-strict", "mode": "SHADOW", "selector": {"route": "/v1/orders/{id}", "method": "POST"},
               "rate": 1,
            "period": "1s", "burst": 20, "scope": "TENANT", "owner": "orders-team", "reason": "a stricter candidate"}
         ]}
        """;

    @TempDir
    static Path dir;

    private static StoreServer node;
    private static String admin;

    @BeforeAll
    static void startNodeAndDecide() throws Exception
    {
        node = startNode(dir.resolve("busy"));
        admin = "127.0.0.1:" + node.adminPort();
        decide(node, 80, 10);
    }

    @AfterAll
    static void stopNode()
    {
        if (node != null)
        {
            node.close();
        }
    }

    static StoreServer startNode(final Path home) throws Exception
    {
        Files.createDirectories(home);
        final Path policies = home.resolve("policies.json");
        Files.writeString(policies, POLICIES, StandardCharsets.UTF_8);
        return new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(0).shards(1).ioThreads(1)
            .policiesFile(policies).dataDir(home.resolve("data")).adminToken(TOKEN)).start();
    }

    /** {@code orders} order creations by tenant acme (50 allowed, the rest denied) and {@code others} by globex. */
    static void decide(final StoreServer node, final int orders, final int others) throws Exception
    {
        // A deadline a loaded CI machine meets: the test needs the node's decisions, not the SDK's own.
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + node.port())
            .deadline(java.time.Duration.ofSeconds(5)).build())
        {
            final Descriptor acme = Descriptor.builder().tenant("acme").route("/v1/orders/42").method("POST").build();
            final Descriptor globex = Descriptor.builder().tenant("globex").route("/v1/orders/7").method("POST")
                .build();
            for (int i = 0; i < orders; i++)
            {
                final Decision decision = client.acquireBlocking(acme, 1);
                assertFalse(decision.degraded(), "the node decided: " + decision);
            }
            for (int i = 0; i < others; i++)
            {
                client.acquireBlocking(globex, 1);
            }
        }
    }

    static PolicyCommandTest.Result report(final String... args)
    {
        return CommandRun.capture(ReportCommand::run, args, Map.of(AdminClient.TOKEN_ENVIRONMENT, TOKEN), dir);
    }

    private static String unusedAddress() throws Exception
    {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return "127.0.0.1:" + probe.getLocalPort();
        }
    }

    static String cell(final String html, final String policy, final int column)
    {
        final Matcher row = Pattern.compile("<tr><td>" + Pattern.quote(policy) + "</td>((?:<td[^>]*>[^<]*</td>)+)</tr>")
            .matcher(html);
        assertTrue(row.find(), "a table row for " + policy);
        final Matcher cells = Pattern.compile("<td[^>]*>([^<]*)</td>").matcher(row.group(1));
        for (int i = 0; i <= column; i++)
        {
            assertTrue(cells.find(), "column " + column + " of " + policy);
        }
        return cells.group(1);
    }

    @Test
    void shouldChartTheNodesOwnDecisionsInOneSelfContainedPage() throws Exception
    {
        final Path out = dir.resolve("report.html");
        final PolicyCommandTest.Result result = report("--since", "10m", "--out", out.toString(), "--admin", admin);

        assertEquals(0, result.status(), result.toString());
        assertTrue(result.out().startsWith("wrote " + out + ": 90 decisions"), result.out());
        final String html = Files.readString(out, StandardCharsets.UTF_8);
        // 50 of acme's 80 allowed (its burst), 30 denied; globex's 10 allowed.
        assertEquals("60", cell(html, "orders-write", 0), "allowed");
        assertEquals("30", cell(html, "orders-write", 1), "denied");
        assertEquals("60", cell(html, "orders-strict", 3), "the shadow's burst of 20 would have denied 60 of 90");
        assertTrue(html.contains("<figure class=\"chart\" id=\"policy-1\"><figcaption>orders-write: "), "its chart");
        assertTrue(html.contains("enforced denials against the shadow&#39;s prediction"), "shadow against enforced");
        // Hot keys are each node's view of its last seconds: acme when the node published it still, else a sentence.
        assertTrue(html.contains("<td>acme</td>") || html.contains("no hot keys: no node sampled a decision recently"),
            "hot keys");
        assertTrue(html.contains("Decision latency p99 per node"), "a p99 chart");
        assertFalse(html.contains("no decisions in this window"));
        // The nodes' shadow comparison per tenant and route, their sampled rejections, and no appeal yet.
        final String number = "</td><td class=\"[^\"]*\">";
        assertTrue(Pattern.compile("orders-strict</td><td>acme</td><td>/v1/orders/\\{id}" + number + "80" + number
            + "30</td>").matcher(html).find(), "compare rows: acme's 80 decisions, 30 refused by the enforced version");
        assertTrue(Pattern.compile("orders-write</td><td>acme</td><td>/v1/orders/\\{id}" + number + "30</td>")
            .matcher(html).find(), "sampled rejections: all 30 of acme's");
        assertTrue(html.contains("no appeal was made in this window"), "appeals section");
        assertTrue(html.contains(">0.00%</td>"), "false-rejection ratio: no appeal of 30 denials");
        assertTrue(html.contains("nodes were started without --region"), "region section");
        // Self-contained: nothing to fetch.
        assertFalse(Pattern.compile("<(link|img|iframe)|src=|@import|url\\(").matcher(html).find(), "loads nothing");
        assertTrue(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));

        final HeadlessChromium.Page page = HeadlessChromium.load(out, dir);
        assertEquals(java.util.List.of(), page.console(), "the page logged nothing (an error would be here)");
        assertTrue(page.dom().contains("data-charts-ok=\"true\""), "every chart drew a mark: " + head(page.dom()));
        final Matcher charts = Pattern.compile("data-charts=\"(\\d+)\"").matcher(page.dom());
        assertTrue(charts.find() && Integer.parseInt(charts.group(1)) >= 3, head(page.dom()));
        assertTrue(page.dom().contains("[charts ok]</title>"), head(page.dom()));
    }

    @Test
    void shouldFailTheBrowserCheckOnAChartThatDrewNothing() throws Exception
    {
        final Path out = dir.resolve("broken.html");
        final PolicyCommandTest.Result result = report("--since", "10m", "--out", out.toString(), "--admin", admin);
        assertEquals(0, result.status(), result.toString());
        // The same page with the first chart's marks taken away, as a renderer bug would.
        final String html = Files.readString(out, StandardCharsets.UTF_8);
        final int figure = html.indexOf("<figure class=\"chart\"");
        final int end = html.indexOf("</figure>", figure);
        Files.writeString(out, html.substring(0, figure) + html.substring(figure, end).replace("class=\"mark\"",
            "class=\"x\"") + html.substring(end), StandardCharsets.UTF_8);

        final HeadlessChromium.Page page = HeadlessChromium.load(out, dir);
        assertTrue(page.dom().contains("data-charts-ok=\"false\""), head(page.dom()));
        assertEquals(1, page.console().size(), page.console().toString());
        assertTrue(page.console().get(0).contains("report: charts without marks: policy-1"), page.console().toString());
    }

    @Test
    void shouldSayNoDecisionsInAnEmptyWindowRatherThanDrawEmptyCharts() throws Exception
    {
        try (StoreServer quiet = startNode(dir.resolve("quiet")))
        {
            final Path out = dir.resolve("empty.html");
            final PolicyCommandTest.Result result = report("--since", "1h", "--out", out.toString(), "--admin",
                "127.0.0.1:" + quiet.adminPort());
            assertEquals(0, result.status(), result.toString());
            assertTrue(result.out().contains("no decisions in this window"), result.out());
            final String html = Files.readString(out, StandardCharsets.UTF_8);
            assertTrue(html.contains("<p class=\"empty-window\">no decisions in this window"), html);
            assertFalse(html.contains("id=\"policy-"), "no decision chart");
            final HeadlessChromium.Page page = HeadlessChromium.load(out, dir);
            assertTrue(page.dom().contains("data-charts-ok=\"true\""), head(page.dom()));
            assertEquals(java.util.List.of(), page.console());
        }
    }

    @Test
    void shouldRefuseABadWindowAnUnwritableOutAndANodeThatDoesNotAnswer() throws Exception
    {
        final PolicyCommandTest.Result since = report("--since", "yesterday", "--out", "r.html", "--admin", admin);
        assertEquals(2, since.status(), since.toString());
        PolicyCommandTest.assertOneLineFailure(since, "limiter report: --since 'yesterday' is not a duration");

        final Path file = Files.writeString(dir.resolve("a-file"), "x");
        final PolicyCommandTest.Result out = report("--out", file.resolve("r.html").toString(), "--admin", admin);
        assertEquals(2, out.status(), out.toString());
        PolicyCommandTest.assertOneLineFailure(out, "limiter report: --out " + file.resolve("r.html"));
        assertTrue(out.err().contains("does not exist"), out.err());

        final String down = unusedAddress();
        final PolicyCommandTest.Result unreachable = report("--out", dir.resolve("r.html").toString(), "--admin",
            admin + "," + down);
        assertEquals(1, unreachable.status(), unreachable.toString());
        PolicyCommandTest.assertOneLineFailure(unreachable, "limiter report: node http://" + down
            + " refused the connection");
        assertFalse(Files.exists(dir.resolve("r.html")), "no report written");
    }

    private static String head(final String dom)
    {
        return dom.substring(0, Math.min(400, dom.length()));
    }
}
