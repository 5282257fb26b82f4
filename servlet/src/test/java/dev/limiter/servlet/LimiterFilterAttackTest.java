package dev.limiter.servlet;

import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The servlet filter attacked as an HTTP client would: client-address headers, crafted paths, HEAD
 * for GET, and requests that make other clients' requests fail. All but the paths got past the
 * filter before their fixes (a hostile review: 30 of 30 past per-address limits with a made-up first
 * X-Forwarded-For address or line, 20 HEADs ran a GET handler limited to 2, 58 of 240 other users'
 * requests failed with a 400).
 */
@Timeout(120)
class LimiterFilterAttackTest
{
    /**
     * orders: 3 per tenant an hour; per-address: 3 per client IP an hour on /ip; per-user: 1,000/s per principal on /u;
     * report-gets: 2 GETs of a report per tenant an hour; anything: 3 per tenant an hour on /anything (tenant: the header, else
     * the client IP); the rest 1,000/s.
     */
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"orders\",\"selector\":{\"route\":\"/orders/{id}\"},\"rate\":1,\"period\":\"3600s\",\"burst\":3,\"owner\":\"t\"}," +
        "{\"id\":\"per-address\",\"selector\":{\"route\":\"/ip\"},\"rate\":1,\"period\":\"3600s\",\"burst\":3,\"scope\":\"CLIENT_IP\",\"owner\":\"t\"}," +
        "{\"id\":\"per-user\",\"selector\":{\"route\":\"/u\"},\"rate\":1000,\"scope\":\"PRINCIPAL\",\"owner\":\"t\"}," +
        "{\"id\":\"report-gets\",\"selector\":{\"method\":\"GET\",\"route\":\"/reports/{id}\"},\"rate\":1,\"period\":\"3600s\",\"burst\":2,\"owner\":\"t\"}," +
        "{\"id\":\"anything\",\"selector\":{\"route\":\"/anything\"},\"rate\":1,\"period\":\"3600s\",\"burst\":3,\"owner\":\"t\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1000,\"owner\":\"t\"}}";

    @TempDir
    Path dir;

    private final ConcurrentLinkedQueue<String> served = new ConcurrentLinkedQueue<>();
    private final HttpClient http = HttpClient.newHttpClient();
    private StoreServer node;
    private Server jetty;

    @BeforeEach
    void startNode() throws Exception
    {
        final Path policies = dir.resolve("policies.json");
        Files.writeString(policies, POLICIES);
        node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(policies).dataDir(dir)).start();
    }

    @AfterEach
    void stop() throws Exception
    {
        if (jetty != null)
        {
            jetty.stop();
        }
        node.close();
    }

    /** The filter as web.xml would set it up, in front of a servlet that records the path it served. */
    private int startJetty(final String principalHeader, final String clientIpHeader) throws Exception
    {
        return startJetty(principalHeader, clientIpHeader, new HttpServlet()
        {
            @Override
            protected void service(final HttpServletRequest request, final HttpServletResponse response) throws IOException
            {
                served.add(request.getPathInfo() == null ? "" : request.getPathInfo());
                response.setStatus(200);
                response.getWriter().print("served");
            }
        });
    }

    private int startJetty(final String principalHeader, final String clientIpHeader, final HttpServlet servlet) throws Exception
    {
        final FilterHolder filter = new FilterHolder(LimiterFilter.class);
        filter.setInitParameter(LimiterFilter.ENDPOINTS, "127.0.0.1:" + node.port());
        filter.setInitParameter(LimiterFilter.DEADLINE_MILLIS, "2000");
        filter.setInitParameter(LimiterFilter.TENANT_HEADER, "X-Tenant-Id");
        if (principalHeader != null)
        {
            filter.setInitParameter(LimiterFilter.PRINCIPAL_HEADER, principalHeader);
        }
        if (clientIpHeader != null)
        {
            filter.setInitParameter(LimiterFilter.CLIENT_IP_HEADER, clientIpHeader);
        }
        jetty = new Server();
        final ServerConnector connector = new ServerConnector(jetty);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        jetty.addConnector(connector);
        final ServletContextHandler context = new ServletContextHandler("/app");
        context.addServlet(new ServletHolder(servlet), "/*");
        context.addFilter(filter, "/*", EnumSet.of(DispatcherType.REQUEST));
        jetty.setHandler(context);
        jetty.start();
        return connector.getLocalPort();
    }

    private HttpResponse<String> get(final int port, final String path, final String... headers) throws Exception
    {
        final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/app" + path))
            .timeout(Duration.ofSeconds(10));
        for (int i = 0; i + 1 < headers.length; i += 2)
        {
            request.header(headers[i], headers[i + 1]); // adds: a name given twice is sent as two header lines
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aClientThatWritesItsOwnFirstXForwardedForAddressIsLimitedPerAddressAllTheSame() throws Exception
    {
        // A proxy in front (trusted, as the filter asks) appends the address it saw: 198.51.100.7 is the attacker's one address.
        final int port = startJetty(null, "X-Forwarded-For");
        int passedIp = 0;
        int passedDefault = 0;
        for (int i = 1; i <= 30; i++)
        {
            final String spoofed = "203.0.113." + i + ", 198.51.100.7";
            passedIp += get(port, "/ip", "X-Forwarded-For", spoofed).statusCode() == 200 ? 1 : 0;
            passedDefault += get(port, "/anything", "X-Forwarded-For", spoofed).statusCode() == 200 ? 1 : 0;
        }
        System.out.println("one client (198.51.100.7) with a made-up first X-Forwarded-For address each time: " + passedIp +
            " of 30 past per-address (3 an hour), " + passedDefault + " of 30 past a per-tenant limit (3 an hour, tenant = the address)");
        assertTrue(passedIp <= 3 && passedDefault <= 3, "per-address limits held for " + passedIp + " and " + passedDefault + " requests");
    }

    @Test
    void aClientThatSendsItsOwnXForwardedForLineBeforeTheProxysIsLimitedPerAddressAllTheSame() throws Exception
    {
        // A proxy that adds a header line of its own (rather than appending to the client's) after the client's.
        final int port = startJetty(null, "X-Forwarded-For");
        int passed = 0;
        for (int i = 1; i <= 30; i++)
        {
            passed += get(port, "/ip", "X-Forwarded-For", "203.0.113." + i, "X-Forwarded-For", "198.51.100.7").statusCode() == 200 ? 1 : 0;
        }
        System.out.println("two X-Forwarded-For lines, the client's first: " + passed + " of 30 past per-address (3 an hour)");
        assertTrue(passed <= 3, passed + " requests passed");
    }

    @Test
    void aClientWithoutThePrincipalNeverFailsAnotherClientsRequest() throws Exception
    {
        final int port = startJetty("X-User", null);
        final int victims = 16;
        final int rounds = 15;
        final AtomicInteger victim400 = new AtomicInteger();
        final AtomicInteger victimOk = new AtomicInteger();
        final AtomicInteger attacker400 = new AtomicInteger();
        final List<Thread> threads = new ArrayList<>();
        final CountDownLatch go = new CountDownLatch(1);
        for (int t = 0; t < victims; t++)
        {
            final int user = t;
            threads.add(new Thread(() ->
            {
                try
                {
                    go.await();
                    for (int r = 0; r < rounds; r++)
                    {
                        final int status = get(port, "/u", "X-Tenant-Id", "good", "X-User", "user-" + user).statusCode();
                        (status == 400 ? victim400 : victimOk).incrementAndGet();
                        Thread.sleep(user == 0 ? 0 : 1);
                    }
                }
                catch (final Exception e)
                {
                    throw new IllegalStateException(e);
                }
            }));
        }
        for (int t = 0; t < 4; t++)
        {
            threads.add(new Thread(() ->
            {
                try
                {
                    go.await();
                    for (int r = 0; r < rounds * 4; r++)
                    {
                        attacker400.addAndGet(get(port, "/u", "X-Tenant-Id", "mallory").statusCode() == 400 ? 1 : 0); // no X-User
                    }
                }
                catch (final Exception e)
                {
                    throw new IllegalStateException(e);
                }
            }));
        }
        threads.forEach(Thread::start);
        go.countDown();
        for (final Thread thread : threads)
        {
            thread.join();
        }
        System.out.println("requests without X-User (each a 400 of its own: " + attacker400.get() + "); well-formed requests of other " +
            "users answered 400: " + victim400.get() + " of " + (victim400.get() + victimOk.get()));
        assertEquals(0, victim400.get(), "well-formed requests failed because another client's request shared their frame");
    }

    @Test
    void aHeadRequestRunsTheGetHandlerSoItCountsAgainstTheGetPolicy() throws Exception
    {
        // An application written the usual way: doGet only; HttpServlet answers HEAD by running doGet (Spring's @GetMapping too).
        final AtomicInteger reportsBuilt = new AtomicInteger();
        final int port = startJetty(null, null, new HttpServlet()
        {
            @Override
            protected void doGet(final HttpServletRequest request, final HttpServletResponse response) throws IOException
            {
                reportsBuilt.incrementAndGet(); // the expensive part the GET policy protects
                response.setStatus(200);
                response.getWriter().print("report");
            }
        });
        for (int i = 0; i < 20; i++)
        {
            http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/app/reports/7")).method("HEAD",
                HttpRequest.BodyPublishers.noBody()).header("X-Tenant-Id", "acme").build(), HttpResponse.BodyHandlers.discarding());
        }
        System.out.println("20 HEAD requests against a policy of 2 GETs an hour: the GET handler ran " + reportsBuilt.get() + " times");
        assertTrue(reportsBuilt.get() <= 2, "the GET handler ran " + reportsBuilt.get() + " times");
    }

    /** Paths that the application serves as an order (one segment after /orders), however spelt. */
    private static final Pattern ORDER = Pattern.compile("^/+orders/+[^/]+/*$");

    @Test
    void noSpellingOfAPathGetsAnOrderPastTheOrdersLimit() throws Exception
    {
        final int port = startJetty(null, null);
        final String[] spellings = {
            "/orders/1", "/orders/2/", "//orders/3", "/orders//4", "/orders;a=b/5", "/orders/6;a=b", "/%6Frders/7", "/orders/%38",
            "/orders/9%3F", "/orders/10%23", "/orders/11%25", "/orders/12%20", "/orders/13%2F14", "/orders/./15", "/x/../orders/16",
            "/orders/%2e/17", "/orders/%2E%2E/orders/18", "/orders/19%00", "/orders/20%0A", "/orders/%C2%8521", "/orders/22%E2%80%A8",
            "/orders/" + "a".repeat(600), "/orders/%FF", "/orders/\\23", "/orders/24%5C", "/./orders/25", "/orders/26?x=/y", "/orders/27#f",
        };
        final Map<String, Integer> statuses = new TreeMap<>();
        for (final String path : spellings)
        {
            statuses.put(path.length() > 40 ? path.substring(0, 40) + "..." : path, rawGet(port, "/app" + path, "X-Tenant-Id", "acme"));
        }
        final List<String> orders = served.stream().filter(p -> ORDER.matcher(p).matches()).toList();
        System.out.println("statuses: " + statuses + "\nserved as orders: " + orders);
        assertTrue(orders.size() <= 3, "served " + orders.size() + " orders with a limit of 3: " + orders);
    }

    /** A GET written by hand (so that the path goes as written), its status. */
    private static int rawGet(final int port, final String target, final String... headers) throws IOException
    {
        try (Socket socket = new Socket("127.0.0.1", port))
        {
            socket.setSoTimeout(10_000);
            final StringBuilder request = new StringBuilder("GET ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
            for (int i = 0; i + 1 < headers.length; i += 2)
            {
                request.append(headers[i]).append(": ").append(headers[i + 1]).append("\r\n");
            }
            final OutputStream out = socket.getOutputStream();
            out.write(request.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            final InputStream in = socket.getInputStream();
            final byte[] head = in.readNBytes(12);
            final String status = new String(head, StandardCharsets.ISO_8859_1);
            return status.length() >= 12 ? Integer.parseInt(status.substring(9, 12)) : -1;
        }
    }
}
