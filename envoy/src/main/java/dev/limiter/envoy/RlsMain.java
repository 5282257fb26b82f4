package dev.limiter.envoy;

import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.BuildInfo;
import dev.limiter.protocol.HostPort;
import io.netty.handler.ssl.ClientAuth;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** {@code ./limiter rls}: Envoy's rate limit service (gRPC) in front of the store, until stopped. */
@Command(
    name = "rls",
    mixinStandardHelpOptions = true,
    versionProvider = RlsMain.Version.class,
    description = {
        "Serves Envoy's rate limit service (envoy.service.ratelimit.v3.RateLimitService, gRPC) from the store.",
        "Stateless: every descriptor is decided by its shard's leader (the SDK routes it there, so any gateway",
        "answers for the whole cluster). Policies select Envoy descriptors with selector.envoy (docs/envoy.md).",
        "  ./limiter rls --servers 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403 --listen 127.0.0.1:8081",
        "The port also answers gRPC health checks (grpc.health.v1.Health, service \"\" or " + RlsServer.SERVICE + "):",
        "SERVING once the gateway holds a policy set, NOT_SERVING before and while it shuts down.",
        "Exit status: 0 stopped by a signal, 1 could not start, 2 bad input."},
    sortOptions = false)
public final class RlsMain implements Callable<Integer>
{
    /** Consecutive calls without an answer before the gateway's SDK decides locally (the SDK's default is 3). */
    static final int CIRCUIT_FAILURES = 64;

    private final PrintStream out;
    private final PrintStream err;
    private final CountDownLatch stop;

    @Option(names = "--listen", paramLabel = "HOST:PORT", description = "Where Envoy connects (default: ${DEFAULT-VALUE}).")
    String listen = "127.0.0.1:8081";

    @Option(names = "--servers", paramLabel = "HOST:PORT[,...]", split = ",",
        description = "Store nodes, any or all of them (default: ${DEFAULT-VALUE}).")
    List<String> servers = List.of("127.0.0.1:7400");

    @Option(names = "--deadline-ms", paramLabel = "MS",
        description = "Longest wait for the store per request, in ms; Envoy's own timeout (default 20 ms) also bounds it " +
            "(default: ${DEFAULT-VALUE}).")
    long deadlineMillis = 15;

    @Option(names = "--response-headers",
        description = "Add RateLimit, RateLimit-Policy and (over the limit) Retry-After to the responses Envoy sends.")
    boolean responseHeaders;

    @Option(names = "--io-threads", paramLabel = "N",
        description = "Event loop threads, shared by the gRPC server and the SDK's connections (default: ${DEFAULT-VALUE}).")
    int ioThreads = 1;

    @Mixin
    PortOptions portOptions = new PortOptions();

    @Option(names = "--metrics-listen", paramLabel = "HOST:PORT",
        description = "Serve the gateway's and its SDK's meters at http://HOST:PORT/metrics (Prometheus text; default: off).")
    String metricsListen;

    RlsMain(final PrintStream out, final PrintStream err, final CountDownLatch stop)
    {
        this.out = out;
        this.err = err;
        this.stop = stop;
    }

    /**
     * Runs the gateway until {@code stop} opens.
     *
     * @return the exit status: 0 stopped, 1 could not start, 2 bad input
     */
    static int run(final String[] args, final PrintStream out, final PrintStream err, final CountDownLatch stop)
    {
        final CommandLine line = new CommandLine(new RlsMain(out, err, stop));
        line.setOut(new java.io.PrintWriter(out, true));
        line.setErr(new java.io.PrintWriter(err, true));
        line.setParameterExceptionHandler((e, a) ->
        {
            err.println("limiter rls: " + e.getMessage() + " (./limiter rls --help)");
            return 2;
        });
        return line.execute(args);
    }

    /** {@code --version}: this build's version, commit and protocol generation. */
    static final class Version implements CommandLine.IVersionProvider
    {
        @Override
        public String[] getVersion()
        {
            return new String[] {BuildInfo.current().describe()};
        }
    }

    public static void main(final String[] args)
    {
        final CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(stop::countDown, "rls-stop"));
        System.exit(run(args, System.out, System.err, stop));
    }

    @Override
    public Integer call() throws InterruptedException
    {
        final InetSocketAddress address;
        final InetSocketAddress metricsAddress;
        final RlsServer.Port port;
        try
        {
            address = HostPort.parse(listen, "--listen");
            metricsAddress = metricsListen == null ? null : HostPort.parse(metricsListen, "--metrics-listen");
            servers.forEach(s -> HostPort.parse(s, "--servers"));
            if (ioThreads < 1 || ioThreads > 64)
            {
                throw new IllegalArgumentException("--io-threads: 1 to 64, was " + ioThreads);
            }
            if (deadlineMillis < 1 || deadlineMillis > 60_000)
            {
                throw new IllegalArgumentException("--deadline-ms: 1 to 60000, was " + deadlineMillis);
            }
            port = portOptions.port();
        }
        catch (final IllegalArgumentException e)
        {
            err.println("limiter rls: " + e.getMessage());
            return 2;
        }
        final LimiterClient.Builder builder = LimiterClient.builder().endpoints(servers.toArray(String[]::new))
            .deadline(Duration.ofMillis(deadlineMillis))
            // A gateway makes hundreds of calls a second: one stall of the store (or of this host's
            // CPU) times out dozens of them at once, which is not the store being gone.
            .circuit(CIRCUIT_FAILURES, Duration.ofMillis(250));
        if (port.storeTls() != null)
        {
            builder.tls(port.storeTls().context());
        }
        final RlsServer server;
        try
        {
            server = RlsServer.start(builder, ioThreads, address, Duration.ofMillis(deadlineMillis), responseHeaders, port);
        }
        catch (final RuntimeException e)
        {
            err.println("limiter rls: " + e.getMessage());
            return 1;
        }
        final GatewayMetrics metrics;
        try
        {
            metrics = metricsAddress == null ? null : GatewayMetrics.serve(metricsAddress, server);
        }
        catch (final RuntimeException e)
        {
            server.close();
            err.println("limiter rls: " + e.getMessage());
            return 1;
        }
        out.println("limiter rls: Envoy rate limit service on " + address.getHostString() + ":" + server.port() +
            (port.tls() == null ? "" : port.clientAuth() == ClientAuth.REQUIRE ? " (mutual TLS)" :
                port.clientAuth() == ClientAuth.OPTIONAL ? " (TLS, client certificates optional)" : " (TLS)") +
            (metrics == null ? "" : ", metrics at http://" + metricsAddress.getHostString() + ":" + metrics.port() + "/metrics") +
            " (store " + String.join(",", servers) + ", deadline " + deadlineMillis + " ms" +
            (server.client().stats().openConnections() == 0 ?
                "; no store node reachable yet: calls get the policies' fallback, or UNAVAILABLE until a policy set is held" : "") +
            ")");
        try
        {
            stop.await();
        }
        finally
        {
            if (metrics != null)
            {
                metrics.close();
            }
            server.close();
        }
        return 0;
    }
}
