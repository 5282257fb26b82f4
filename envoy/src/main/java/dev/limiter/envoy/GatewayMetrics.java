package dev.limiter.envoy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterMetrics;
import dev.limiter.protocol.BuildInfo;
import dev.limiter.protocol.ProtocolGeneration;
import dev.limiter.protocol.ReloadingTls;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@code GET /metrics} (Prometheus text) of a gateway: its own counters ({@code limiter_rls_*}) and
 * its SDK's ({@code limiter_sdk_*}, see {@link LimiterMetrics}), on a port of their own. One
 * thread, GET only, nothing read from the request body.
 */
public final class GatewayMetrics implements AutoCloseable
{
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final HttpServer server;
    private final ExecutorService thread;

    private GatewayMetrics(final HttpServer server, final ExecutorService thread)
    {
        this.server = server;
        this.thread = thread;
    }

    /**
     * Serves the gateway's and the client's meters on {@code address}.
     *
     * @throws UncheckedIOException when the address cannot be bound
     */
    public static GatewayMetrics serve(final InetSocketAddress address, final RateLimitGateway gateway, final LimiterClient client)
    {
        return serve(address, gateway, client, null);
    }

    /**
     * Serves the meters of {@code server}'s gateway and client, and of its port: connections
     * refused ({@code limiter_refusals_total{port="rls",reason}}), TLS reloads and the expiry of its
     * certificate, named as a node's are.
     *
     * @throws UncheckedIOException when the address cannot be bound
     */
    public static GatewayMetrics serve(final InetSocketAddress address, final RlsServer server)
    {
        return serve(address, server.gateway(), server.client(), server);
    }

    private static GatewayMetrics serve(final InetSocketAddress address, final RateLimitGateway gateway, final LimiterClient client,
        final RlsServer port)
    {
        final HttpServer server;
        try
        {
            server = HttpServer.create(RlsServer.bindable(address), 16);
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot serve metrics on " + address.getHostString() + ":" + address.getPort() + ": " +
                e.getMessage() + " (choose another --metrics-listen port)", e);
        }
        final ExecutorService thread = Executors.newSingleThreadExecutor(r ->
        {
            final Thread t = new Thread(r, "limiter-rls-metrics");
            t.setDaemon(true);
            return t;
        });
        final GatewayMetrics metrics = new GatewayMetrics(server, thread);
        metrics.bind(gateway, client);
        if (port != null)
        {
            metrics.bind(port);
        }
        server.createContext("/metrics", metrics::answer);
        server.setExecutor(thread);
        server.start();
        return metrics;
    }

    private void bind(final RateLimitGateway gateway, final LimiterClient client)
    {
        FunctionCounter.builder("limiter.rls.requests", gateway, RateLimitGateway::requests)
            .description("ShouldRateLimit calls taken").register(registry);
        FunctionCounter.builder("limiter.rls.over.limit", gateway, RateLimitGateway::overLimit)
            .description("Calls answered OVER_LIMIT").register(registry);
        FunctionCounter.builder("limiter.rls.decided.locally", gateway, RateLimitGateway::decidedLocally)
            .description("Descriptors the SDK decided on its own because no node answered in time").register(registry);
        FunctionCounter.builder("limiter.rls.failed", gateway, RateLimitGateway::failed)
            .description("Calls failed: no domain, no descriptors or too many (INVALID_ARGUMENT), or no decision at all " +
                "(UNAVAILABLE, DEADLINE_EXCEEDED)")
            .register(registry);
        FunctionCounter.builder("limiter.rls.limit.overrides.ignored", gateway, RateLimitGateway::overridesIgnored)
            .description("Descriptors that carried a limit override, decided by the store's policy instead").register(registry);
        FunctionCounter.builder("limiter.rls.checks", gateway, RateLimitGateway::checks)
            .description("Descriptors checked without a charge: hits_addend 0, or a cost beyond 2^31-1").register(registry);
        LimiterMetrics.bind(client, registry);
        final BuildInfo build = BuildInfo.current();
        Gauge.builder("limiter.build.info", () -> 1)
            .description("Always 1; its labels name the build: version, git commit and protocol generation")
            .tags("version", build.version(), "commit", build.commit(),
                "protocol_generation", Integer.toString(ProtocolGeneration.CURRENT))
            .register(registry);
    }

    private void bind(final RlsServer port)
    {
        FunctionCounter.builder("limiter.refusals", port, RlsServer::refusedOverCap).tags("port", "rls", "reason", "max-connections")
            .description("Connections and requests a port refused or closed, by port and reason").register(registry);
        FunctionCounter.builder("limiter.refusals", port, RlsServer::failedHandshakes).tags("port", "rls", "reason", "tls-handshake")
            .description("Connections and requests a port refused or closed, by port and reason").register(registry);
        FunctionCounter.builder("limiter.tls.reloads", port, RlsServer::tlsReloaded).tags("result", "reloaded")
            .description("Changed TLS files loaded (reloaded) or refused, the previous ones kept (failed)").register(registry);
        FunctionCounter.builder("limiter.tls.reloads", port, RlsServer::tlsFailed).tags("result", "failed")
            .description("Changed TLS files loaded (reloaded) or refused, the previous ones kept (failed)").register(registry);
        Gauge.builder("limiter.tls.files.refused", port, p -> p.tlsRefusing() ? 1 : 0)
            .description("1 while the TLS files on disk have changed and do not load: the previous certificate is still served").register(registry);
        Gauge.builder("limiter.rls.connections", port, RlsServer::openConnections)
            .description("Connections open on the gateway's port").register(registry);
        final ReloadingTls tls = port.settings().tls();
        if (tls != null)
        {
            Gauge.builder("limiter.tls.certificate.expiry.timestamp.seconds", tls, t -> t.certificate().getNotAfter().toInstant().getEpochSecond())
                .description("When the TLS certificate of the gateway's port expires (its notAfter), seconds since the epoch").strongReference(true)
                .register(registry);
        }
    }

    /** The port it serves on. */
    public int port()
    {
        return server.getAddress().getPort();
    }

    private void answer(final HttpExchange exchange) throws IOException
    {
        try (exchange)
        {
            if (!"GET".equals(exchange.getRequestMethod()))
            {
                exchange.getResponseHeaders().add("Allow", "GET");
                exchange.sendResponseHeaders(405, -1);
                return;
            }
            final byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody())
            {
                out.write(body);
            }
        }
    }

    @Override
    public void close()
    {
        server.stop(0);
        thread.shutdownNow();
    }
}
