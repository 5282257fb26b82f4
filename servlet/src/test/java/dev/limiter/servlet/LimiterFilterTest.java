package dev.limiter.servlet;

import dev.limiter.client.LimiterClient;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Enumeration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The filter in a real embedded Jetty (Servlet 6, ee10) in front of a real store node, called over HTTP. */
@Timeout(60)
class LimiterFilterTest
{
    /**
     * orders: 3 per tenant, refilling one an hour; closed: fails closed when no node answers;
     * deletes: 2 per tenant an hour; any method that is not HTTP's: 2 per tenant an hour; the rest: 1,000/s.
     */
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"orders\",\"selector\":{\"route\":\"/orders/{id}\"},\"rate\":1,\"period\":\"3600s\",\"burst\":3,\"owner\":\"t\"}," +
        "{\"id\":\"closed\",\"selector\":{\"route\":\"/closed\"},\"rate\":1000,\"failureMode\":\"CLOSED\",\"owner\":\"t\"}," +
        "{\"id\":\"deletes\",\"selector\":{\"route\":\"/files/{name}/delete\"},\"rate\":1,\"period\":\"3600s\",\"burst\":2,\"owner\":\"t\"}," +
        "{\"id\":\"made-up-methods\",\"selector\":{\"method\":\"OTHER\"},\"rate\":1,\"period\":\"3600s\",\"burst\":2,\"owner\":\"t\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1000,\"owner\":\"t\"}}";

    @TempDir
    Path dir;

    private final AtomicInteger served = new AtomicInteger();
    private final HttpClient http = HttpClient.newHttpClient();
    private StoreServer node;
    private Server jetty;

    @AfterEach
    void stop() throws Exception
    {
        if (jetty != null)
        {
            jetty.stop();
        }
        if (node != null)
        {
            node.close();
        }
    }

    private StoreServer startNode() throws Exception
    {
        final Path policies = dir.resolve("policies.json");
        Files.writeString(policies, POLICIES);
        return new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(policies).dataDir(dir)).start();
    }

    /** Jetty on 127.0.0.1, an ephemeral port, context /app: the filter in front of a servlet that counts what it serves. */
    private int startJetty(final FilterHolder filter) throws Exception
    {
        jetty = new Server();
        final ServerConnector connector = new ServerConnector(jetty);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        jetty.addConnector(connector);
        final ServletContextHandler context = new ServletContextHandler("/app");
        context.addServlet(new ServletHolder(new HttpServlet()
        {
            @Override
            protected void service(final HttpServletRequest request, final HttpServletResponse response) throws IOException
            {
                served.incrementAndGet();
                response.setStatus(200);
                response.getWriter().print("served");
            }
        }), "/*");
        context.addFilter(filter, "/*", EnumSet.of(DispatcherType.REQUEST));
        jetty.setHandler(context);
        jetty.start();
        return connector.getLocalPort();
    }

    private HttpResponse<String> get(final int port, final String path, final Map<String, String> headers) throws Exception
    {
        final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/app" + path))
            .timeout(Duration.ofSeconds(10));
        headers.forEach(request::header);
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void requestsWithinTheLimitReachTheApplicationWithHeadersAndTheRestAre429WithRetryAfter() throws Exception
    {
        node = startNode();
        final FilterHolder filter = new FilterHolder(LimiterFilter.class);
        filter.setInitParameter(LimiterFilter.ENDPOINTS, "127.0.0.1:" + node.port());
        // Node and filter share this test's cold JVM: the SDK's 20 ms default can pass before a first answer.
        filter.setInitParameter(LimiterFilter.DEADLINE_MILLIS, "2000");
        filter.setInitParameter(LimiterFilter.TENANT_HEADER, "X-Tenant-Id");
        final int port = startJetty(filter);
        for (int i = 0; i < 3; i++)
        {
            final HttpResponse<String> ok = get(port, "/orders/" + i, Map.of("X-Tenant-Id", "acme"));
            assertEquals(200, ok.statusCode(), ok.body());
            assertEquals("\"orders\";q=3;w=10800", ok.headers().firstValue("RateLimit-Policy").orElse(""));
            assertTrue(ok.headers().firstValue("Limiter-Decision-Id").orElse("").matches("[0-9a-f]{16}-0"),
                "the node's decision id: " + ok.headers().map());
            assertTrue(ok.headers().firstValue("RateLimit").orElse("").startsWith("\"orders\";r=" + (2 - i) + ";"), ok.headers().map().toString());
        }
        final HttpResponse<String> refused = get(port, "/orders/9", Map.of("X-Tenant-Id", "acme"));
        assertEquals(429, refused.statusCode());
        assertTrue(refused.headers().firstValue("Limiter-Decision-Id").isPresent(), "a refusal can be appealed by its id");
        final long retryAfter = Long.parseLong(refused.headers().firstValue("Retry-After").orElse("0"));
        assertTrue(retryAfter > 3500 && retryAfter <= 3600, "one token an hour, less the seconds the calls took: " + retryAfter);
        assertTrue(refused.headers().firstValue("RateLimit").orElse("").startsWith("\"orders\";r=0;"), refused.headers().map().toString());
        assertEquals("rate limited by policy orders; retry after " + retryAfter + " s\n", refused.body());
        assertEquals(3, served.get(), "the refused request never reached the application");
        // The route is the path as the container decoded it: an encoding does not dodge the policy.
        assertEquals(429, get(port, "/%6Frders/9", Map.of("X-Tenant-Id", "acme")).statusCode());
        assertEquals(3, served.get());
        assertEquals(200, get(port, "/orders/1", Map.of("X-Tenant-Id", "globex")).statusCode(), "another tenant has its own bucket");
        // No tenant header: the caller's address is its tenant.
        for (int i = 0; i < 3; i++)
        {
            assertEquals(200, get(port, "/orders/1", Map.of()).statusCode());
        }
        assertEquals(429, get(port, "/orders/1", Map.of()).statusCode(), "anonymous callers are limited by address");
    }

    private HttpResponse<String> send(final int port, final String method, final String path, final String tenant) throws Exception
    {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/app" + path)).timeout(Duration.ofSeconds(10))
            .method(method, HttpRequest.BodyPublishers.noBody()).header("X-Tenant-Id", tenant).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aMethodHttpDoesNotHaveIsOneFixedMethodSoNoneOfItsSpellingsGetsPastTheLimits() throws Exception
    {
        node = startNode();
        final FilterHolder filter = new FilterHolder(LimiterFilter.class);
        filter.setInitParameter(LimiterFilter.ENDPOINTS, "127.0.0.1:" + node.port());
        filter.setInitParameter(LimiterFilter.DEADLINE_MILLIS, "2000");
        filter.setInitParameter(LimiterFilter.TENANT_HEADER, "X-Tenant-Id");
        final int port = startJetty(filter);
        // ENVOY once selected Envoy's namespace, where a request no policy selects has no limit.
        assertEquals(200, send(port, "ENVOY", "/anything", "mallory").statusCode());
        assertEquals(200, send(port, "eNvOy", "/anything", "mallory").statusCode());
        final HttpResponse<String> third = send(port, "FROBNICATE", "/anything", "mallory");
        assertEquals(429, third.statusCode(), "every made-up method is OTHER, one bucket: " + third.body());
        assertTrue(third.body().contains("made-up-methods"), third.body());
        assertEquals(429, send(port, "get", "/anything", "mallory").statusCode(), "methods are case-sensitive: get is not GET");
        assertEquals(200, send(port, "GET", "/anything", "mallory").statusCode(), "a real method is itself");
        assertEquals(3, served.get());
    }

    @Test
    void aPathThatDecodesToAQuestionMarkOrASpaceIsStillTheRouteTheApplicationServes() throws Exception
    {
        node = startNode();
        final FilterHolder filter = new FilterHolder(LimiterFilter.class);
        filter.setInitParameter(LimiterFilter.ENDPOINTS, "127.0.0.1:" + node.port());
        filter.setInitParameter(LimiterFilter.DEADLINE_MILLIS, "2000");
        filter.setInitParameter(LimiterFilter.TENANT_HEADER, "X-Tenant-Id");
        final int port = startJetty(filter);
        // Decoded, /files/x%3F/delete is /files/x?/delete: cut at '?', the route was /files/x, which no
        // policy names, so the delete went through on the default; a space was refused with a 400.
        for (final String name : new String[] {"x%3F", "my%20doc", "x%23y"})
        {
            assertEquals(200, get(port, "/files/" + name + "/delete", Map.of("X-Tenant-Id", name)).statusCode(), name);
            assertEquals(200, get(port, "/files/" + name + "/delete", Map.of("X-Tenant-Id", name)).statusCode(), name);
            final HttpResponse<String> third = get(port, "/files/" + name + "/delete", Map.of("X-Tenant-Id", name));
            assertEquals(429, third.statusCode(), name + ": " + third.body());
            assertTrue(third.body().contains("policy deletes"), third.body());
        }
        // (Jetty refuses an encoded '%' in a path itself, as an ambiguous encoding; the filter would encode it again.)
        assertEquals("/files/x%3F/delete", HttpFields.route("/files/x?/delete"));
        assertEquals("/a%25b%20c%23d%C2%85", HttpFields.route("/a%b c#d\u0085"));
        assertEquals("/é/x", HttpFields.route("/é/x"));
        assertEquals("/", HttpFields.route(""));
    }

    @Test
    void aTenantTheLimiterCannotUseIsA400ThatNamesTheFieldAndNeverReachesTheApplication() throws Exception
    {
        node = startNode();
        final FilterHolder filter = new FilterHolder(LimiterFilter.class);
        filter.setInitParameter(LimiterFilter.ENDPOINTS, "127.0.0.1:" + node.port());
        // Node and filter share this test's cold JVM: the SDK's 20 ms default can pass before a first answer.
        filter.setInitParameter(LimiterFilter.DEADLINE_MILLIS, "2000");
        filter.setInitParameter(LimiterFilter.TENANT_HEADER, "X-Tenant-Id");
        final int port = startJetty(filter);
        final HttpResponse<String> bad = get(port, "/orders/1", Map.of("X-Tenant-Id", "t".repeat(65)));
        assertEquals(400, bad.statusCode());
        assertEquals("request refused by the rate limiter: tenant is too long (65 bytes; at most 64)\n", bad.body());
        assertEquals(0, served.get());
    }

    @Test
    void withoutATenantHeaderConfiguredAClientsOwnTenantHeaderIsIgnoredSoItCannotTakeAFreshBucketPerRequest()
        throws Exception
    {
        node = startNode();
        final FilterHolder filter = new FilterHolder(LimiterFilter.class);
        filter.setInitParameter(LimiterFilter.ENDPOINTS, "127.0.0.1:" + node.port());
        filter.setInitParameter(LimiterFilter.DEADLINE_MILLIS, "2000");
        final int port = startJetty(filter);
        for (int i = 0; i < 3; i++)
        {
            assertEquals(200, get(port, "/orders/" + i, Map.of("X-Tenant-Id", "fresh-" + i)).statusCode());
        }
        final HttpResponse<String> fourth = get(port, "/orders/3", Map.of("X-Tenant-Id", "fresh-3"));
        assertEquals(429, fourth.statusCode(), "one address, one tenant, whatever the header says: " + fourth.body());
        assertEquals(3, served.get());
    }

    @Test
    void withNoNodeToAskAFailClosedRouteAnswers503AndAFailOpenOneGoesOnFromTheEmergencyBudget() throws Exception
    {
        node = startNode();
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + node.port()).deadline(Duration.ofMillis(1000)).build())
        {
            // Programmatic: the application's client, and a rule that leaves health checks alone.
            final RequestDescriptors headers = RequestDescriptors.fromHeaders("X-Tenant-Id", null, null);
            final int port = startJetty(new FilterHolder(new LimiterFilter(client,
                request -> request.getRequestURI().endsWith("/health") ? null : headers.describe(request))));
            assertEquals(200, get(port, "/closed", Map.of("X-Tenant-Id", "acme")).statusCode());
            node.close();
            node = null;
            final HttpResponse<String> closed = get(port, "/closed", Map.of("X-Tenant-Id", "acme"));
            assertEquals(503, closed.statusCode(), closed.body());
            assertEquals("1", closed.headers().firstValue("Retry-After").orElse(""));
            assertEquals("the rate limiter is unreachable and policy closed refuses requests then (fail-closed)\n", closed.body());
            final HttpResponse<String> open = get(port, "/anything", Map.of("X-Tenant-Id", "acme"));
            assertEquals(200, open.statusCode(), "fail-open: decided in the SDK from the emergency budget: " + open.body());
            assertEquals(200, get(port, "/health", Map.of()).statusCode(), "not limited at all");
            assertEquals(3, served.get());
        }
    }

    @Test
    void noDecisionAtAllIsA503SayingWhy() throws Exception
    {
        final FilterHolder filter = new FilterHolder(LimiterFilter.class);
        filter.setInitParameter(LimiterFilter.ENDPOINTS, "127.0.0.1:" + unusedPort());
        filter.setInitParameter(LimiterFilter.DEADLINE_MILLIS, "200");
        final int port = startJetty(filter);
        final HttpResponse<String> answer = get(port, "/orders/1", Map.of("X-Tenant-Id", "acme"));
        // Never reached a node: no policy is known, so there is no emergency budget to decide from.
        assertEquals(503, answer.statusCode(), answer.body());
        assertTrue(answer.body().startsWith("the rate limiter could not decide: "), answer.body());
        assertEquals(0, served.get());
    }

    @Test
    void badInitParametersStopTheFilterWithAMessageSayingWhatToSet()
    {
        final ServletException missing = assertThrows(ServletException.class, () -> new LimiterFilter().init(config(Map.of())));
        assertTrue(missing.getMessage().contains("init parameter limiter.endpoints is required"), missing.getMessage());
        final ServletException cost = assertThrows(ServletException.class, () -> new LimiterFilter().init(config(Map.of(
            LimiterFilter.ENDPOINTS, "127.0.0.1:7400", LimiterFilter.COST, "0"))));
        assertTrue(cost.getMessage().contains("limiter.cost must be a whole number of at least 1, was '0'"), cost.getMessage());
        final ServletException deadline = assertThrows(ServletException.class, () -> new LimiterFilter().init(config(Map.of(
            LimiterFilter.ENDPOINTS, "127.0.0.1:7400", LimiterFilter.DEADLINE_MILLIS, "soon"))));
        assertTrue(deadline.getMessage().contains("limiter.deadlineMillis must be a whole number"), deadline.getMessage());
        final ServletException endpoint = assertThrows(ServletException.class, () -> new LimiterFilter().init(config(Map.of(
            LimiterFilter.ENDPOINTS, "no-port-here"))));
        assertFalse(endpoint.getMessage().isBlank());
        assertThrows(IllegalArgumentException.class, () -> new LimiterFilter(null, request -> null));
    }

    private static int unusedPort() throws IOException
    {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return probe.getLocalPort();
        }
    }

    private static FilterConfig config(final Map<String, String> parameters)
    {
        return new FilterConfig()
        {
            @Override
            public String getFilterName()
            {
                return "limiter";
            }

            @Override
            public ServletContext getServletContext()
            {
                return null;
            }

            @Override
            public String getInitParameter(final String name)
            {
                return parameters.get(name);
            }

            @Override
            public Enumeration<String> getInitParameterNames()
            {
                return Collections.enumeration(parameters.keySet());
            }
        };
    }
}
