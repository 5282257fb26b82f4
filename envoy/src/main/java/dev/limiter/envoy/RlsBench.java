package dev.limiter.envoy;

import dev.limiter.protocol.HostPort;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./limiter rls bench}: an open-loop load of Envoy rate limit calls, as Envoy makes them (one
 * unary call per request, a deadline each), spread over one or more gateways. Latency is measured
 * from when each call was due, not when it was sent, so a stall is charged to every call it delays.
 */
@Command(
    name = "rls bench",
    mixinStandardHelpOptions = true,
    description = {
        "Calls Envoy's rate limit service at a fixed rate (open loop) and prints one JSON line: answers by kind",
        "(decided_locally = the SDK's own decisions while no node answered) and latency percentiles in microseconds.",
        "  ./limiter rls bench --targets 127.0.0.1:7601,127.0.0.1:7602,127.0.0.1:7603 --rate 1000 --duration 20",
        "Exit status: 0 done, 1 no call was answered, 2 bad input."},
    sortOptions = false)
public final class RlsBench implements Callable<Integer>
{
    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--targets", paramLabel = "HOST:PORT[,...]", split = ",",
        description = "Gateways to call, in turn (default: ${DEFAULT-VALUE}).")
    List<String> targets = List.of("127.0.0.1:8081");

    @Option(names = "--rate", paramLabel = "N", description = "Calls per second (default: ${DEFAULT-VALUE}).")
    int rate = 1000;

    @Option(names = "--duration", paramLabel = "S", description = "Seconds measured (default: ${DEFAULT-VALUE}).")
    int duration = 10;

    @Option(names = "--warmup", paramLabel = "S",
        description = "Seconds at the same rate before measuring: this generator is a fresh JVM, and until its gRPC " +
            "client is compiled its own latency fills the tail (docs/envoy.md) (default: ${DEFAULT-VALUE}).")
    int warmup = 20;

    @Option(names = "--domain", description = "The requests' domain (default: ${DEFAULT-VALUE}).")
    String domain = "bench";

    @Option(names = "--key", description = "The descriptor's one entry key (default: ${DEFAULT-VALUE}).")
    String key = "remote_address";

    @Option(names = "--keys", paramLabel = "K", description = "Distinct values, called in turn (default: ${DEFAULT-VALUE}).")
    int keys = 10_000;

    @Option(names = "--deadline-ms", paramLabel = "MS", description = "Each call's gRPC deadline, as Envoy's filter timeout (default: ${DEFAULT-VALUE}).")
    long deadlineMillis = 20;

    RlsBench(final PrintStream out, final PrintStream err)
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
        return OpenLoop.run(new RlsBench(out, err), "rls bench", args, out, err);
    }

    @Override
    public Integer call() throws InterruptedException
    {
        final List<InetSocketAddress> addresses = new ArrayList<>();
        try
        {
            targets.forEach(t -> addresses.add(HostPort.parse(t, "--targets")));
            OpenLoop.checkRates(rate, duration, warmup, deadlineMillis);
            OpenLoop.check(keys >= 1 && keys <= 10_000_000, "--keys: 1 to 10000000, was " + keys);
            OpenLoop.check(!domain.isEmpty() && !key.isEmpty(), "--domain and --key must not be empty");
        }
        catch (final IllegalArgumentException e)
        {
            err.println("limiter rls bench: " + e.getMessage());
            return 2;
        }
        final List<ManagedChannel> channels = new ArrayList<>();
        addresses.forEach(a -> channels.add(NettyChannelBuilder.forAddress(a.getHostString(), a.getPort()).usePlaintext()
            .directExecutor().build()));
        try
        {
            final List<RateLimitServiceGrpc.RateLimitServiceStub> stubs = new ArrayList<>();
            channels.forEach(c -> stubs.add(RateLimitServiceGrpc.newStub(c)));
            final RateLimitRequest[] requests = new RateLimitRequest[Math.min(keys, 100_000)];
            for (int i = 0; i < requests.length; i++)
            {
                requests[i] = RateLimitRequest.newBuilder().setDomain(domain).addDescriptors(RateLimitDescriptor.newBuilder()
                    .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue("10." + (i >> 16) + "." + ((i >> 8) & 255) + "." + (i & 255))))
                    .build();
            }
            final OpenLoop.Call<RateLimitResponse> call = (i, observer) ->
                stubs.get((int)(i % stubs.size())).withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS)
                    .shouldRateLimit(requests[(int)(i % requests.length)], observer);
            OpenLoop.drive(rate, warmup, deadlineMillis, tally(), call);
            final OpenLoop.Tally<RateLimitResponse> measured = tally();
            OpenLoop.drive(rate, duration, deadlineMillis, measured, call);
            return measured.report("rls bench", rate, duration, stubs.size(), "ok", "overLimit", out, err);
        }
        finally
        {
            for (final ManagedChannel channel : channels)
            {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    /** OVER_LIMIT is refused; an answer with dynamic metadata is the gateway SDK's own decision. */
    private static OpenLoop.Tally<RateLimitResponse> tally()
    {
        return new OpenLoop.Tally<>(response -> response.getOverallCode() == RateLimitResponse.Code.OVER_LIMIT,
            RateLimitResponse::hasDynamicMetadata);
    }
}
