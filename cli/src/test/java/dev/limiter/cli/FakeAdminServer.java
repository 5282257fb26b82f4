package dev.limiter.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A stand-in for one node's admin HTTP API: answers every call with one canned answer (or, for a method and
 * path given one of its own, that one) and keeps what it was sent.
 */
final class FakeAdminServer implements AutoCloseable
{
    /** One request as the fake received it. */
    record Seen(String method, String rawPath, String rawQuery, String authorization, String actor, String contentType, String body)
    {
    }

    final List<Seen> requests = new CopyOnWriteArrayList<>();

    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool();
    // Released on close, so that a "slow" handler never outlives the test.
    private final CountDownLatch released = new CountDownLatch(1);
    private volatile int status = 200;
    private volatile String body = "{}";
    private volatile boolean slow;
    // "METHOD /raw/path" -> the answer to such calls, taking precedence over the canned one.
    private final Map<String, Canned> routes = new ConcurrentHashMap<>();

    private record Canned(int status, String body)
    {
    }

    private FakeAdminServer() throws IOException
    {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 0);
        server.createContext("/", this::handle);
        server.setExecutor(executor);
        server.start();
    }

    static FakeAdminServer start() throws IOException
    {
        return new FakeAdminServer();
    }

    /** Answers every later call with this status and JSON body. */
    FakeAdminServer answer(final int status, final String body)
    {
        this.status = status;
        this.body = body;
        return this;
    }

    /** Answers later calls of this method to this raw path (no query) with this status and JSON body; others as before. */
    FakeAdminServer answer(final String method, final String rawPath, final int status, final String body)
    {
        routes.put(method + " " + rawPath, new Canned(status, body));
        return this;
    }

    /** Never answers (until closed): a node that accepts the connection and hangs. */
    FakeAdminServer hang()
    {
        this.slow = true;
        return this;
    }

    String address()
    {
        return "127.0.0.1:" + server.getAddress().getPort();
    }

    Seen last()
    {
        return requests.get(requests.size() - 1);
    }

    /** An address nothing listens on: a port that was free a moment ago. */
    static String closedAddress() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1")))
        {
            return "127.0.0.1:" + socket.getLocalPort();
        }
    }

    private void handle(final HttpExchange exchange) throws IOException
    {
        try (exchange)
        {
            final String requestBody = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            requests.add(new Seen(exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), exchange.getRequestURI().getRawQuery(),
                exchange.getRequestHeaders().getFirst("Authorization"), exchange.getRequestHeaders().getFirst("X-Limiter-Actor"),
                exchange.getRequestHeaders().getFirst("Content-Type"), requestBody));
            if (slow)
            {
                released.await(30, TimeUnit.SECONDS);
                return;
            }
            final Canned route = routes.get(exchange.getRequestMethod() + " " + exchange.getRequestURI().getRawPath());
            final int answerStatus = route == null ? status : route.status();
            final byte[] answer = (route == null ? body : route.body()).getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(answerStatus, answer.length == 0 ? -1 : answer.length);
            try (OutputStream out = exchange.getResponseBody())
            {
                out.write(answer);
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close()
    {
        released.countDown();
        server.stop(0);
        executor.shutdownNow();
    }
}
