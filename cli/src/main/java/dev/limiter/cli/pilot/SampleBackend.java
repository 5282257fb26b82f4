package dev.limiter.cli.pilot;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The pilot's sample backend: an HTTP service on 127.0.0.1 (an ephemeral port) with a fixed
 * capacity, {@code workers} requests served at a time, each taking {@code serviceMillis}. A request
 * that finds every worker busy waits in a queue, so latency rises with the queue's depth; one that
 * finds {@code maxQueue} requests waiting is refused at once with 503, and one that waited longer
 * than {@code maxWaitMillis} for a worker is answered 503 without being served (its caller gave up
 * in all but name). The tenant is the {@code X-Tenant} header; what it saw is counted per tenant in
 * {@link BackendStats}, one set per pilot phase ({@link #nextPhase()}).
 */
public final class SampleBackend implements AutoCloseable
{
    /** The header that names the request's tenant (absent: "-"). */
    public static final String TENANT_HEADER = "X-Tenant";

    /** The backend's capacity; every value is checked in {@link #Settings}. */
    public record Settings(int workers, int serviceMillis, int maxQueue, int maxWaitMillis)
    {
        public Settings
        {
            check("workers", workers, 1, 64);
            check("serviceMillis", serviceMillis, 1, 10_000);
            check("maxQueue", maxQueue, 0, 100_000);
            check("maxWaitMillis", maxWaitMillis, 1, 60_000);
        }

        private static void check(final String name, final int value, final int min, final int max)
        {
            if (value < min || value > max)
            {
                throw new IllegalArgumentException("backend." + name + " must be " + min + " to " + max + ", was "
                    + value);
            }
        }

        /** Requests a second the workers can serve when nobody waits. */
        public double capacityPerSecond()
        {
            return workers * 1000.0 / serviceMillis;
        }
    }

    private final Settings settings;
    private final HttpServer server;
    private final ExecutorService workerPool;
    /** Requests waiting for a worker. */
    private final AtomicInteger waiting = new AtomicInteger();
    /** Requests arrived and not answered yet (waiting or in service). */
    private final AtomicInteger present = new AtomicInteger();
    private final AtomicReference<BackendStats> stats = new AtomicReference<>(new BackendStats());

    private SampleBackend(final Settings settings, final HttpServer server, final ExecutorService workerPool)
    {
        this.settings = settings;
        this.server = server;
        this.workerPool = workerPool;
    }

    /** Starts the backend on 127.0.0.1 and an ephemeral port. */
    public static SampleBackend start(final Settings settings) throws IOException
    {
        final HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 256);
        final AtomicInteger threads = new AtomicInteger();
        final ExecutorService workers = Executors.newFixedThreadPool(settings.workers(), r ->
        {
            final Thread thread = new Thread(r, "pilot-backend-worker-" + threads.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        final SampleBackend backend = new SampleBackend(settings, server, workers);
        server.createContext("/", backend::arrived);
        // The handler only admits and queues: the server's own thread never waits for a worker.
        server.setExecutor(null);
        server.start();
        return backend;
    }

    /** The backend's base URI, e.g. {@code http://127.0.0.1:41234}. */
    public String uri()
    {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    public Settings settings()
    {
        return settings;
    }

    /** Requests waiting for a worker now. */
    public int queueDepth()
    {
        return waiting.get();
    }

    /** Ends the current phase's counts and starts the next phase's: returns the ended phase's. */
    public BackendStats nextPhase()
    {
        return stats.getAndSet(new BackendStats());
    }

    private void arrived(final HttpExchange exchange)
    {
        final long arrivedAt = System.nanoTime();
        final String tenant = tenant(exchange);
        final BackendStats phase = stats.get();
        // Every worker busy and maxQueue waiting: refused at once, so overload shows as 5xx, not as a growing queue.
        if (present.incrementAndGet() > settings.maxQueue() + settings.workers())
        {
            respond(exchange, 503, "overloaded: queue full", phase, tenant, arrivedAt);
            return;
        }
        phase.queueDepthSeen(waiting.incrementAndGet());
        workerPool.execute(() -> serve(exchange, tenant, arrivedAt, phase));
    }

    private void serve(final HttpExchange exchange, final String tenant, final long arrivedAt, final BackendStats phase)
    {
        waiting.decrementAndGet();
        if (System.nanoTime() - arrivedAt > TimeUnit.MILLISECONDS.toNanos(settings.maxWaitMillis()))
        {
            respond(exchange, 503, "overloaded: waited too long", phase, tenant, arrivedAt);
            return;
        }
        final long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.serviceMillis());
        long left;
        while ((left = end - System.nanoTime()) > 0)
        {
            LockSupport.parkNanos(left);
        }
        respond(exchange, 200, "ok", phase, tenant, arrivedAt);
    }

    private void respond(final HttpExchange exchange, final int status, final String text, final BackendStats phase,
                         final String tenant, final long arrivedAt)
    {
        present.decrementAndGet();
        final byte[] body = (text + "\n").getBytes(StandardCharsets.UTF_8);
        try (exchange; OutputStream out = exchange.getResponseBody())
        {
            exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
            exchange.sendResponseHeaders(status, body.length);
            out.write(body);
        }
        catch (final IOException e)
        {
            // The caller went away: it is counted as answered with what we meant to send.
        }
        phase.answered(tenant, status, System.nanoTime() - arrivedAt);
    }

    private static String tenant(final HttpExchange exchange)
    {
        final String header = exchange.getRequestHeaders().getFirst(TENANT_HEADER);
        // A bounded label: the stats keep one row per tenant, so a hostile header cannot grow them without limit.
        if (header == null || header.isBlank() || header.length() > 64)
        {
            return "-";
        }
        return header.strip();
    }

    @Override
    public void close()
    {
        server.stop(0);
        workerPool.shutdownNow();
    }
}
