package dev.limiter.envoy.api;

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
import io.grpc.stub.StreamObserver;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

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
        final CommandLine line = new CommandLine(new ApiBench(out, err));
        line.setOut(new java.io.PrintWriter(out, true));
        line.setErr(new java.io.PrintWriter(err, true));
        line.setParameterExceptionHandler((e, a) ->
        {
            err.println("limiter api bench: " + e.getMessage() + " (./limiter api bench --help)");
            return 2;
        });
        return line.execute(args);
    }

    @Override
    public Integer call() throws InterruptedException
    {
        final List<InetSocketAddress> addresses = new ArrayList<>();
        final String token;
        try
        {
            targets.forEach(t -> addresses.add(HostPort.parse(t, "--targets")));
            check(rate >= 1 && rate <= 1_000_000, "--rate: 1 to 1000000 calls per second, was " + rate);
            check(duration >= 1 && duration <= 3600, "--duration: 1 to 3600 s, was " + duration);
            check(warmup >= 0 && warmup <= 600, "--warmup: 0 to 600 s, was " + warmup);
            check(tenants >= 1 && tenants <= 10_000_000, "--tenants: 1 to 10000000, was " + tenants);
            check(deadlineMillis >= 1 && deadlineMillis <= 60_000, "--deadline-ms: 1 to 60000, was " + deadlineMillis);
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
            drive(authed, requests, warmup, new Tally());
            final Tally measured = new Tally();
            drive(authed, requests, duration, measured);
            final Histogram latency = measured.latency.getIntervalHistogram();
            out.println(String.format(Locale.ROOT,
                "{\"rate\":%d,\"durationSeconds\":%d,\"targets\":%d,\"sent\":%d,\"allowed\":%d,\"refused\":%d," +
                    "\"decidedLocally\":%d," +
                    "\"errors\":%d,\"p50Us\":%.1f,\"p90Us\":%.1f,\"p99Us\":%.1f,\"p999Us\":%.1f,\"maxUs\":%.1f}",
                rate, duration, authed.size(), measured.sent.get(), measured.allowed.get(), measured.refused.get(),
                    measured.local.get(),
                measured.errors.get(), latency.getValueAtPercentile(50) / 1e3, latency.getValueAtPercentile(90) / 1e3,
                latency.getValueAtPercentile(99) / 1e3, latency.getValueAtPercentile(99.9) / 1e3,
                    latency.getMaxValue() / 1e3));
            if (measured.errors.get() > 0)
            {
                err.println("limiter api bench: first error: " + measured.firstError);
            }
            return measured.allowed.get() + measured.refused.get() == 0 ? 1 : 0;
        }
        finally
        {
            for (final ManagedChannel channel : channels)
            {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    private static void check(final boolean ok, final String problem)
    {
        if (!ok)
        {
            throw new IllegalArgumentException(problem);
        }
    }

    /** Calls at the rate for {@code seconds}, then waits (up to the deadline) for the last answers. */
    private void drive(final List<Channel> channels, final AcquireRequest[] requests, final int seconds,
        final Tally tally) throws InterruptedException
    {
        final long interval = 1_000_000_000L / rate;
        final long start = System.nanoTime();
        final long calls = (long)seconds * rate;
        for (long i = 0; i < calls; i++)
        {
            final long due = start + i * interval;
            long wait;
            while ((wait = due - System.nanoTime()) > 0)
            {
                LockSupport.parkNanos(wait);
            }
            tally.sent.incrementAndGet();
            final Channel channel = channels.get((int)(i % channels.size()));
            ClientCalls.asyncUnaryCall(channel.newCall(RateLimiterMethods.ACQUIRE,
                CallOptions.DEFAULT.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS)),
                    requests[(int)(i % requests.length)],
                tally.observer(due));
        }
        final long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(deadlineMillis + 1_000);
        while (tally.answered() < tally.sent.get() && System.nanoTime() < end)
        {
            Thread.sleep(5);
        }
    }

    private static final class Tally
    {
        final AtomicLong sent = new AtomicLong();
        final AtomicLong allowed = new AtomicLong();
        final AtomicLong refused = new AtomicLong();
        final AtomicLong local = new AtomicLong();
        final AtomicLong errors = new AtomicLong();
        final Recorder latency = new Recorder(3);
        volatile String firstError;

        long answered()
        {
            return allowed.get() + refused.get() + errors.get();
        }

        StreamObserver<AcquireResponse> observer(final long due)
        {
            return new StreamObserver<>()
            {
                @Override
                public void onNext(final AcquireResponse response)
                {
                    latency.recordValue(Math.max(0, System.nanoTime() - due));
                    (response.getDecision().getAllowed() ? allowed : refused).incrementAndGet();
                    if (response.getDecision().getDecidedLocally())
                    {
                        local.incrementAndGet();
                    }
                }

                @Override
                public void onError(final Throwable t)
                {
                    latency.recordValue(Math.max(0, System.nanoTime() - due));
                    if (firstError == null)
                    {
                        firstError = t.toString();
                    }
                    errors.incrementAndGet();
                }

                @Override
                public void onCompleted()
                {
                }
            };
        }
    }
}
