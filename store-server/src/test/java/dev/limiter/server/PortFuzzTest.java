package dev.limiter.server;

import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Fuzzer-style bad input on the ports the data-port tests do not cover: the admin HTTP port (with
 * and without the token) and the Raft port. Whatever arrives, the node answers with an error or
 * closes the connection, changes nothing, and keeps leading, deciding and committing.
 */
@Timeout(120)
class PortFuzzTest
{
    private static final String TOKEN = "fuzz-test-admin-token-0123456789";

    @TempDir
    static Path dir;

    private static StoreServer server;
    private static int raftPort;
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception
    {
        final int port = ClusterPorts.free(1, 100)[0];
        raftPort = port + 100;
        Files.createDirectories(dir.resolve("config"));
        final ServerConfig config = TestNode.config(dir.resolve("config"), port, 1).adminToken(TOKEN).frameTimeoutMillis(1000)
            .nodeId("n1").peers(Map.of("n1", new InetSocketAddress("127.0.0.1", port))).raftPortOffset(100).dataDir(dir.resolve("n1"));
        server = new StoreServer(config).start();
        final StoreServer started = server;
        Await.until("the one-member cluster to elect itself", Duration.ofSeconds(20),
            () -> started.replication().canDecide());
        assertTrue(server.replication().canDecide());
    }

    @AfterAll
    static void stop()
    {
        server.close();
    }

    @Test
    void garbageOnTheAdminPortGetsAnErrorOrAClosedConnectionAndChangesNothing() throws Exception
    {
        final Random random = new Random(0xAD317L);
        final long setVersion = server.policyState().setVersion();
        final int auditSize = server.policyState().audit(r -> true, 100_000).size();
        final String[] methods = {"GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "G\u0000T", "TRACE", ""};
        final String[] paths = {"/v1/policies/orders", "/v1/policies/x/rollback", "/v1/exemptions/e", "/v1/members/n9", "/v1/audit?limit=abc",
            "/v1/audit?since=yesterday", "/v1/policies/%ZZ", "/../../etc/passwd", "/v1//", "/metrics?" + "a".repeat(9000), "*"};
        final String[] bodies = {"{", "[]", "null", "{\"rate\":\"many\"}", "{\"id\":\"other\"}", "{\"address\":\"nowhere\"}",
            "{\"toVersion\":-1}", "\u00ff\u00fe", "{\"expiresAt\":\"tomorrow\"}", "x".repeat(70_000)};
        for (int i = 0; i < 300; i++)
        {
            final byte[] request;
            final int kind = random.nextInt(3);
            switch (kind)
            {
                case 0 ->
                {
                    request = new byte[1 + random.nextInt(4096)];
                    random.nextBytes(request);
                }
                case 1 ->
                {
                    final String body = bodies[random.nextInt(bodies.length)];
                    request = (methods[random.nextInt(methods.length)] + " " + paths[random.nextInt(paths.length)] + " HTTP/1.1\r\n" +
                        "Host: x\r\n" + (random.nextBoolean() ? "Authorization: Bearer " + TOKEN + "\r\n" : "Authorization: Basic Zm9v\r\n") +
                        (random.nextInt(5) == 0 ? "X-Limiter-Actor: \u0007evil\r\n" : "") +
                        (random.nextInt(5) == 0 ? "X-Long: " + "y".repeat(20_000) + "\r\n" : "") +
                        "Content-Length: " + (random.nextInt(4) == 0 ? "-5" : Integer.toString(body.length())) + "\r\n\r\n" + body)
                        .getBytes(StandardCharsets.ISO_8859_1);
                }
                default ->
                {
                    // A well-formed request with the token whose body is wrong for the route.
                    final String body = bodies[random.nextInt(bodies.length - 1)];
                    request = (methods[random.nextInt(4)] + " " + paths[random.nextInt(4)] + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                        TOKEN + "\r\nContent-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\nConnection: close\r\n\r\n" + body)
                        .getBytes(StandardCharsets.UTF_8);
                }
            }
            final String answer = exchange(server.adminPort(), request);
            // An error or a closed connection; a read (GET) that happens to be valid may be answered.
            final boolean read = new String(request, 0, Math.min(4, request.length), StandardCharsets.ISO_8859_1).equals("GET ");
            // A well-formed request is always answered, even after the client ended its side of the stream.
            assertTrue(kind != 2 || !answer.isEmpty(), "case " + i + " (well-formed) was not answered");
            assertTrue(answer.isEmpty() || answer.matches("(?s)HTTP/1\\.1 (4\\d\\d|503).*") || read && answer.startsWith("HTTP/1.1 200"),
                "case " + i + ": " + new String(request, 0, Math.min(60, request.length), StandardCharsets.ISO_8859_1) + " -> " +
                    answer.lines().findFirst().orElse(""));
        }
        assertEquals(200, AdminCalls.call(HTTP, server.adminPort(), "GET", "/v1/policies", null, TOKEN).statusCode(), "still serving");
        assertEquals(setVersion, server.policyState().setVersion(), "no policy changed");
        assertEquals(auditSize, server.policyState().audit(r -> true, 100_000).size(), "nothing was recorded");
        assertEquals(1, server.replication().members().size(), "membership unchanged");
    }

    @Test
    void aBadPercentEscapeInThePathOrTheQueryIsA400SayingSo() throws Exception
    {
        // Found by the fuzzing above once an unexpected failure was answered 500 rather than closed.
        final String path = exchange(server.adminPort(), ("DELETE /v1/policies/%ZZ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN +
            "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1), false);
        assertTrue(path.startsWith("HTTP/1.1 400") && path.contains("malformed request path: ") && path.contains("escape '%' as %25"), path);
        final String query = exchange(server.adminPort(), ("DELETE /v1/policies/orders?reason=100%ZZ HTTP/1.1\r\nHost: x\r\n" +
            "Authorization: Bearer " + TOKEN + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1), false);
        assertTrue(query.startsWith("HTTP/1.1 400") && query.contains("malformed query string: ") && query.contains("nothing changed"), query);
        // A client that ends its side after the request (nc -N) still gets the answer, sent from another task.
        final String halfClosed = exchange(server.adminPort(), ("DELETE /v1/policies/orders?reason=100%ZZ HTTP/1.1\r\nHost: x\r\n" +
            "Authorization: Bearer " + TOKEN + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1), true);
        assertTrue(halfClosed.startsWith("HTTP/1.1 400") && halfClosed.contains("malformed query string: "), halfClosed);
        assertTrue(server.policyState().current("orders") != null, "orders is still in force");
    }

    @Test
    void pipelinedRequestsAreAnsweredInTheirOrderEvenWhenTheFirstWaitsForItsCommit() throws Exception
    {
        // A change is answered once committed, a read at once: the read must not overtake it, or a
        // pipelining client would take the read's 200 for the change's.
        final String policy = "{\"id\":\"pipelined\",\"selector\":{\"route\":\"/pipelined\"},\"rate\":3,\"owner\":\"test\"," +
            "\"reason\":\"pipelining\"}";
        final String requests = "PUT /v1/policies/pipelined HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\n" +
            "Content-Length: " + policy.length() + "\r\n\r\n" + policy +
            "GET /v1/policies/nothing-here HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\n\r\n" +
            "GET /v1/policies/pipelined HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\nConnection: close\r\n\r\n";
        final String answers = exchange(server.adminPort(), requests.getBytes(StandardCharsets.ISO_8859_1), false);
        final List<String> statuses = answers.lines().filter(line -> line.startsWith("HTTP/1.1 ")).toList();
        assertEquals(List.of("HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found", "HTTP/1.1 200 OK"), statuses, answers);
        final int change = answers.indexOf("\"setVersion\"");
        final int missing = answers.indexOf("no policy nothing-here in force");
        final int read = answers.lastIndexOf("\"reason\": \"pipelining\"");
        assertTrue(change > 0 && missing > change && read > missing, "the change's result, then the 404, then the policy: " + answers);
        // And the same with the client ending its side after the last request.
        final String halfClosed = exchange(server.adminPort(), requests.replace("\"rate\":3", "\"rate\":4")
            .replace("Connection: close\r\n", "").getBytes(StandardCharsets.ISO_8859_1), true);
        assertEquals(3, halfClosed.lines().filter(line -> line.startsWith("HTTP/1.1 ")).count(), halfClosed);
    }

    @Test
    void garbageOnTheRaftPortLeavesTheNodeLeadingDecidingAndCommitting() throws Exception
    {
        final Random random = new Random(0x4AF7L);
        final byte[] http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < 150; i++)
        {
            final byte[] noise = new byte[1 + random.nextInt(16_384)];
            random.nextBytes(noise);
            final byte[] request;
            if (random.nextBoolean())
            {
                // Looks like gRPC at first: the HTTP/2 preface, then nonsense frames.
                request = new byte[http2Preface.length + noise.length];
                System.arraycopy(http2Preface, 0, request, 0, http2Preface.length);
                System.arraycopy(noise, 0, request, http2Preface.length, noise.length);
            }
            else
            {
                request = noise;
            }
            exchange(raftPort, request);
        }
        assertTrue(server.replication().canDecide(), "still leading");
        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5))
            .localFallback(false).build())
        {
            assertTrue(client.acquireBlocking(Descriptor.of("after-fuzz", "/v1/orders/1"), 1).allowed(), "still deciding");
        }
        final String orders = "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":7,\"period\":\"1s\",\"burst\":7," +
            "\"owner\":\"test\",\"reason\":\"after the fuzz\"}";
        assertEquals(200, AdminCalls.call(HTTP, server.adminPort(), "PUT", "/v1/policies/orders", orders, TOKEN).statusCode(),
            "still committing to the log");
    }

    /** Sends bytes and ends the stream, reads what comes back until the node closes or 2 s pass; "" when nothing came. */
    private static String exchange(final int port, final byte[] request) throws IOException
    {
        return exchange(port, request, true);
    }

    /**
     * As above; {@code halfClose} false leaves the stream open, as an HTTP client does, so that an answer
     * sent after the request was read is not lost to the node closing on the end of the stream first.
     */
    private static String exchange(final int port, final byte[] request, final boolean halfClose) throws IOException
    {
        try (Socket socket = new Socket("127.0.0.1", port))
        {
            socket.setSoTimeout(2000);
            final OutputStream out = socket.getOutputStream();
            try
            {
                out.write(request);
                out.flush();
                if (halfClose)
                {
                    socket.shutdownOutput();
                }
            }
            catch (final IOException closedWhileWriting)
            {
                return "";
            }
            final InputStream in = socket.getInputStream();
            final StringBuilder answer = new StringBuilder();
            final byte[] chunk = new byte[8192];
            try
            {
                int n;
                while ((n = in.read(chunk)) > 0 && answer.length() < 200_000)
                {
                    answer.append(new String(chunk, 0, n, StandardCharsets.ISO_8859_1));
                }
            }
            catch (final IOException timedOutOrReset)
            {
                // what came so far is the answer
            }
            return answer.toString();
        }
    }
}
