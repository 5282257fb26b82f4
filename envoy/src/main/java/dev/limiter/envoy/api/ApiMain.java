package dev.limiter.envoy.api;

import dev.limiter.client.LimiterClient;
import dev.limiter.envoy.PortOptions;
import dev.limiter.envoy.RlsServer;
import dev.limiter.protocol.HostPort;
import io.netty.handler.ssl.ClientAuth;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** {@code ./limiter api}: limiter.v1.RateLimiter (gRPC and HTTP/JSON) in front of the store, until stopped. */
@Command(
    name = "api",
    mixinStandardHelpOptions = true,
    description = {
        "Serves limiter.v1.RateLimiter (wire-protocol/src/main/proto/limiter/v1/rate_limiter.proto)",
        "from the store, over gRPC and HTTP/JSON, for services in any language (docs/api.md).",
        "Stateless, as ./limiter rls: the SDK inside asks each descriptor's shard leader, so the same",
        "policies decide as for Java callers.",
        "  ./limiter api --servers 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403 --token-file api-tokens",
        "  curl -H \"Authorization: Bearer $(head -1 api-tokens)\" -H 'Content-Type: application/json' \\",
        "       -d '{\"tenant\":\"acme\",\"route\":\"/v1/orders\"}' http://127.0.0.1:8092/v1/acquire",
        "Every caller authenticates: a bearer token of --token-file, or a client certificate",
        "(--tls-client-auth require), or both.",
        "Exit status: 0 stopped by a signal, 1 could not start, 2 bad input."},
    sortOptions = false)
public final class ApiMain implements Callable<Integer>
{
    /** Consecutive calls without an answer before the SDK decides locally (as the Envoy gateway's). */
    static final int CIRCUIT_FAILURES = 64;

    private final PrintStream out;
    private final PrintStream err;
    private final CountDownLatch stop;

    @Option(names = "--grpc-listen", paramLabel = "HOST:PORT",
        description = "The gRPC port (default: ${DEFAULT-VALUE}).")
    String grpcListen = "127.0.0.1:8091";

    @Option(names = "--http-listen", paramLabel = "HOST:PORT",
        description = "The HTTP/JSON port; 'off' for none (default: ${DEFAULT-VALUE}).")
    String httpListen = "127.0.0.1:8092";

    @Option(names = "--servers", paramLabel = "HOST:PORT[,...]", split = ",",
        description = "Store nodes, any or all of them (default: ${DEFAULT-VALUE}).")
    List<String> servers = List.of("127.0.0.1:7400");

    @Option(names = "--token-file", paramLabel = "FILE",
        description = "Bearer tokens accepted (Authorization: Bearer TOKEN), one a line, each at least 16 " +
            "printable characters; 'TOKEN acme,globex' binds a token to those tenants.")
    Path tokenFile;

    @Option(names = "--deadline-ms", paramLabel = "MS",
        description = "Longest wait for the store per decision, in ms; a gRPC caller's shorter deadline wins " +
            "(default: ${DEFAULT-VALUE}).")
    long deadlineMillis = 50;

    @Option(names = "--io-threads", paramLabel = "N",
        description = "Event loop threads, shared by both ports and the SDK's connections (default: ${DEFAULT-VALUE}).")
    int ioThreads = 1;

    @Mixin
    PortOptions portOptions = new PortOptions();

    ApiMain(final PrintStream out, final PrintStream err, final CountDownLatch stop)
    {
        this.out = out;
        this.err = err;
        this.stop = stop;
    }

    /**
     * Runs the API until {@code stop} opens.
     *
     * @return the exit status: 0 stopped, 1 could not start, 2 bad input
     */
    static int run(final String[] args, final PrintStream out, final PrintStream err, final CountDownLatch stop)
    {
        final CommandLine line = new CommandLine(new ApiMain(out, err, stop));
        line.setOut(new java.io.PrintWriter(out, true));
        line.setErr(new java.io.PrintWriter(err, true));
        line.setParameterExceptionHandler((e, a) ->
        {
            err.println("limiter api: " + e.getMessage() + " (./limiter api --help)");
            return 2;
        });
        return line.execute(args);
    }

    public static void main(final String[] args)
    {
        final CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(stop::countDown, "api-stop"));
        System.exit(run(args, System.out, System.err, stop));
    }

    @Override
    public Integer call() throws InterruptedException
    {
        final ApiServer.Settings settings;
        try
        {
            final InetSocketAddress grpc = HostPort.parse(grpcListen, "--grpc-listen");
            final InetSocketAddress http = "off".equals(httpListen) ? null : HostPort.parse(httpListen,
                "--http-listen");
            servers.forEach(s -> HostPort.parse(s, "--servers"));
            if (ioThreads < 1 || ioThreads > 64)
            {
                throw new IllegalArgumentException("--io-threads: 1 to 64, was " + ioThreads);
            }
            if (deadlineMillis < 1 || deadlineMillis > 60_000)
            {
                throw new IllegalArgumentException("--deadline-ms: 1 to 60000, was " + deadlineMillis);
            }
            final BearerTokens tokens = tokenFile == null ? null : BearerTokens.read(tokenFile);
            settings = new ApiServer.Settings(grpc, http, Duration.ofMillis(deadlineMillis), tokens,
                portOptions.port());
        }
        catch (final IllegalArgumentException e)
        {
            err.println("limiter api: " + e.getMessage());
            return 2;
        }
        final RlsServer.Port port = settings.port();
        final LimiterClient.Builder builder = LimiterClient.builder().endpoints(servers.toArray(String[]::new))
            .deadline(settings.deadline())
            .circuit(CIRCUIT_FAILURES, Duration.ofMillis(250));
        if (port.storeTls() != null)
        {
            builder.tls(port.storeTls().context());
        }
        final ApiServer server;
        try
        {
            server = ApiServer.start(builder, ioThreads, settings);
        }
        catch (final RuntimeException e)
        {
            err.println("limiter api: " + e.getMessage());
            return 1;
        }
        final String tls = port.tls() == null ? "" : port.clientAuth() == ClientAuth.REQUIRE ? ", mutual TLS" : ", TLS";
        out.println("limiter api: limiter.v1.RateLimiter on gRPC " + settings.grpc().getHostString() + ":"
            + server.grpcPort() + (settings.http() == null ? "" : " and HTTP " + settings.http().getHostString()
            + ":" + server.httpPort()) + tls + (settings.tokens() == null ? ", client certificates"
            : ", bearer tokens") + " (store " + String.join(",", servers) + ", deadline " + deadlineMillis + " ms)");
        try
        {
            stop.await();
        }
        finally
        {
            server.close();
        }
        return 0;
    }
}
