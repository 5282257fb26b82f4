package dev.limiter.envoy.api;

import dev.limiter.envoy.OpenLoop;
import dev.limiter.protocol.HostPort;
import dev.limiter.protocol.api.v1.AcquireRequest;
import dev.limiter.protocol.api.v1.AcquireResponse;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./limiter api bench}: an open-loop load of limiter.v1.RateLimiter/Acquire calls over gRPC,
 * one unary call per decision with a deadline each, spread over one or more API gateways. Latency
 * is measured from when each call was due, not when it was sent, so a stall is charged to every
 * call it delays (as {@code ./limiter rls bench}).
 */
@Command(
    name = "api bench",
    mixinStandardHelpOptions = true,
    description = {
        "Calls limiter.v1.RateLimiter/Acquire (gRPC) at a fixed rate (open loop) and prints one JSON line:",
        "answers by kind (decidedLocally = the gateway SDK's own decisions while no node answered) and",
        "latency percentiles in microseconds.",
        "  ./limiter api bench --targets 127.0.0.1:7701 --token-file data/api-tokens --rate 1000 --duration 20",
        "Exit status: 0 done, 1 no call was answered, 2 bad input."},
    sortOptions = false)
public final class ApiBench implements Callable<Integer>
{
    private static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization",
        Metadata.ASCII_STRING_MARSHALLER);

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--targets", paramLabel = "HOST:PORT[,...]", split = ",",
        description = "API gateways' gRPC ports to call, in turn (default: ${DEFAULT-VALUE}).")
    List<String> targets = List.of("127.0.0.1:8091");

    @Option(names = "--token-file", paramLabel = "FILE", required = true,
        description = "A file of the gateway's bearer tokens: the first is sent.")
    Path tokenFile;

    @Option(names = "--rate", paramLabel = "N", description = "Calls per second (default: ${DEFAULT-VALUE}).")
    int rate = 1000;

    @Option(names = "--duration", paramLabel = "S", description = "Seconds measured (default: ${DEFAULT-VALUE}).")
    int duration = 10;

    @Option(names = "--warmup", paramLabel = "S",
        description = "Seconds at the same rate before measuring, while this fresh JVM's client is compiled " +
            "(default: ${DEFAULT-VALUE}).")
    int warmup = 20;

    @Option(names = "--route", description = "The requests' route (default: ${DEFAULT-VALUE}).")
    String route = "/v1/bench";

    @Option(names = "--tenants", paramLabel = "K",
        description = "Distinct tenants, called in turn (default: ${DEFAULT-VALUE}).")
    int tenants = 10_000;

    @Option(names = "--deadline-ms", paramLabel = "MS",
        description = "Each call's gRPC deadline (default: ${DEFAULT-VALUE}).")
    long deadlineMillis = 50;

    ApiBench(final PrintStream out, final PrintStream err)
    {
        this.out = out;
        this.err = err;
    }

    public static void main(final String[] args)
    {
        System.exit(run(args, System.out, System.err));
    }

    static int run(final String[] args, final PrintStream out, final PrintStream err)
    {
        return OpenLoop.run(new ApiBench(out, err), "api bench", args, out, err);
    }

    @Override
    public Integer call() throws InterruptedException
    {
        final List<InetSocketAddress> addresses = new ArrayList<>();
        final String token;
        try
        {
            targets.forEach(t -> addresses.add(HostPort.parse(t, "--targets")));
            OpenLoop.checkRates(rate, duration, warmup, deadlineMillis);
            OpenLoop.check(tenants >= 1 && tenants <= 10_000_000, "--tenants: 1 to 10000000, was " + tenants);
            token = new String(BearerTokens.read(tokenFile).first(), java.nio.charset.StandardCharsets.UTF_8);
        }
        catch (final IllegalArgumentException e)
        {
            err.println("limiter api bench: " + e.getMessage());
            return 2;
        }
        final Metadata headers = new Metadata();
        headers.put(AUTHORIZATION, "Bearer " + token);
        final List<ManagedChannel> channels = new ArrayList<>();
        addresses.forEach(a -> channels.add(NettyChannelBuilder.forAddress(a.getHostString(),
            a.getPort()).usePlaintext() .directExecutor().build()));
        try
        {
            final List<Channel> authed = new ArrayList<>();
            channels.forEach(c -> authed.add(ClientInterceptors.intercept(c,
                MetadataUtils.newAttachHeadersInterceptor(headers))));
            final AcquireRequest[] requests = new AcquireRequest[Math.min(tenants, 100_000)];
            for (int i = 0; i < requests.length; i++)
            {
                requests[i] = AcquireRequest.newBuilder().setTenant("bench-" + i).setRoute(route).build();
            }
            final OpenLoop.Call<AcquireResponse> call = (i, observer) ->
                ClientCalls.asyncUnaryCall(authed.get((int)(i % authed.size())).newCall(RateLimiterMethods.ACQUIRE,
                    CallOptions.DEFAULT.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS)),
                    requests[(int)(i % requests.length)], observer);
            OpenLoop.drive(rate, warmup, deadlineMillis, tally(), call);
            final OpenLoop.Tally<AcquireResponse> measured = tally();
            OpenLoop.drive(rate, duration, deadlineMillis, measured, call);
            return measured.report("api bench", rate, duration, authed.size(), "allowed", "refused", out, err);
        }
        finally
        {
            for (final ManagedChannel channel : channels)
            {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    /** A decision that does not allow is refused; decidedLocally is the gateway SDK's own decision. */
    private static OpenLoop.Tally<AcquireResponse> tally()
    {
        return new OpenLoop.Tally<>(response -> !response.getDecision().getAllowed(),
            response -> response.getDecision().getDecidedLocally());
    }
}
