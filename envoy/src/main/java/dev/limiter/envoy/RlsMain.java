package dev.limiter.envoy;

import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.BuildInfo;
import dev.limiter.protocol.HostPort;
import dev.limiter.protocol.ReloadingTls;
import io.netty.handler.ssl.ClientAuth;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
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

    @Option(names = "--max-connections", paramLabel = "N",
        description = "Connections served at once; more are closed at once and counted in limiter_refusals_total{port=\"rls\"}. " +
            "Envoy uses about one per worker thread per gateway (default: ${DEFAULT-VALUE}).")
    int maxConnections = RlsServer.DEFAULT_MAX_CONNECTIONS;

    @Option(names = "--tls-cert", paramLabel = "FILE",
        description = "PEM certificate chain: turns TLS on for the gateway's port (off by default). Needs --tls-key.")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE",
        description = "PEM private key of --tls-cert, unencrypted: PKCS#8 (BEGIN PRIVATE KEY), PKCS#1 (BEGIN RSA PRIVATE KEY) or SEC1 " +
            "(BEGIN EC PRIVATE KEY).")
    Path tlsKey;

    @Option(names = "--tls-ca", paramLabel = "FILE",
        description = "PEM CA bundle Envoy's client certificates must come from, with --tls-client-auth.")
    Path tlsCa;

    @Option(names = "--tls-client-auth", paramLabel = "MODE",
        description = "Whether Envoy must present a certificate from --tls-ca: none, optional or require (default: none).")
    String tlsClientAuth = "none";

    @Option(names = "--tls-reload-ms", paramLabel = "MS",
        description = "How often the TLS files (these and --store-tls-*) are checked: a changed certificate, key or CA bundle is used by " +
            "new connections without a restart (files that do not load are logged and the previous ones kept); 0: read at start " +
            "only (default: ${DEFAULT-VALUE}).")
    long tlsReloadMillis = ReloadingTls.DEFAULT_CHECK_EVERY.toMillis();

    @Option(names = "--store-tls-ca", paramLabel = "FILE", description = "Talk to the store over TLS, trusting this CA bundle (PEM).")
    Path storeTlsCa;

    @Option(names = "--store-tls-cert", paramLabel = "FILE",
        description = "Client certificate (PEM) for nodes started with --tls-client-auth require; turns TLS to the store on. " +
            "Needs --store-tls-key.")
    Path storeTlsCert;

    @Option(names = "--store-tls-key", paramLabel = "FILE", description = "The private key of --store-tls-cert (PKCS#8, PKCS#1 or SEC1 PEM).")
    Path storeTlsKey;

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

    /**
     * The port's settings from the options, checked with the node's rules and messages for the
     * same options (ServerConfig), and the TLS files read.
     *
     * @throws IllegalArgumentException what is wrong and what to do
     */
    RlsServer.Port port()
    {
        require((tlsCert == null) == (tlsKey == null), "--tls-cert and --tls-key go together: the certificate and its private key");
        require(tlsCa == null || tlsCert != null, "--tls-ca needs --tls-cert and --tls-key: TLS is on only with a certificate " +
            "(to talk to the store over TLS, give its CA bundle as --store-tls-ca)");
        final ClientAuth clientAuth = clientAuth(tlsClientAuth);
        require(clientAuth == ClientAuth.NONE || tlsCa != null,
            "--tls-client-auth " + clientAuth.name().toLowerCase(Locale.ROOT) + " needs --tls-ca: the CAs client certificates must come from");
        require((storeTlsCert == null) == (storeTlsKey == null),
            "--store-tls-cert and --store-tls-key go together: the client certificate and its private key");
        for (final Path file : new Path[] {tlsCert, tlsKey, tlsCa, storeTlsCert, storeTlsKey, storeTlsCa})
        {
            require(file == null || Files.isReadable(file), "TLS file " + file + " does not exist or is not readable");
        }
        require(tlsReloadMillis == 0 || tlsReloadMillis >= ReloadingTls.MIN_CHECK_EVERY.toMillis() && tlsReloadMillis <= 86_400_000L,
            "--tls-reload-ms must be 0 (never) or " + ReloadingTls.MIN_CHECK_EVERY.toMillis() + " ms to 1 day, was " + tlsReloadMillis + " ms");
        final ReloadingTls tls = tlsCert == null ? null : ReloadingTls.load(tlsCert, tlsKey, tlsCa);
        final ReloadingTls storeTls = storeTlsCa == null && storeTlsCert == null ? null :
            ReloadingTls.load(storeTlsCert, storeTlsKey, storeTlsCa);
        return new RlsServer.Port(maxConnections, tls, clientAuth, storeTls, Duration.ofMillis(tlsReloadMillis));
    }

    private static ClientAuth clientAuth(final String mode)
    {
        try
        {
            return ClientAuth.valueOf(mode.strip().toUpperCase(Locale.ROOT));
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException("--tls-client-auth '" + mode + "' is not none, optional or require");
        }
    }

    private static void require(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(message);
        }
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
            port = port();
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
