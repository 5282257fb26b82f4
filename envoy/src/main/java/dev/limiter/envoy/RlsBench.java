package dev.limiter.envoy;

import dev.limiter.protocol.HostPort;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

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
        final CommandLine line = new CommandLine(new RlsBench(out, err));
        line.setOut(new java.io.PrintWriter(out, true));
        line.setErr(new java.io.PrintWriter(err, true));
        line.setParameterExceptionHandler((e, a) ->
        {
            err.println("limiter rls bench: " + e.getMessage() + " (./limiter rls bench --help)");
            return 2;
        });
        return line.execute(args);
    }

    @Override
    public Integer call() throws InterruptedException
    {
        final List<InetSocketAddress> addresses = new ArrayList<>();
        try
        {
            targets.forEach(t -> addresses.add(HostPort.parse(t, "--targets")));
            check(rate >= 1 && rate <= 1_000_000, "--rate: 1 to 1000000 calls per second, was " + rate);
            check(duration >= 1 && duration <= 3600, "--duration: 1 to 3600 s, was " + duration);
            check(warmup >= 0 && warmup <= 600, "--warmup: 0 to 600 s, was " + warmup);
            check(keys >= 1 && keys <= 10_000_000, "--keys: 1 to 10000000, was " + keys);
            check(deadlineMillis >= 1 && deadlineMillis <= 60_000, "--deadline-ms: 1 to 60000, was " + deadlineMillis);
            check(!domain.isEmpty() && !key.isEmpty(), "--domain and --key must not be empty");
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
            final Tally warm = new Tally();
            drive(stubs, requests, warmup, warm);
            final Tally measured = new Tally();
            drive(stubs, requests, duration, measured);
            final Histogram latency = measured.latency.getIntervalHistogram();
            out.println(String.format(Locale.ROOT,
                "{\"rate\":%d,\"durationSeconds\":%d,\"targets\":%d,\"sent\":%d,\"ok\":%d,\"overLimit\":%d,\"decidedLocally\":%d," +
                    "\"errors\":%d,\"p50Us\":%.1f,\"p90Us\":%.1f,\"p99Us\":%.1f,\"p999Us\":%.1f,\"maxUs\":%.1f}",
                rate, duration, stubs.size(), measured.sent.get(), measured.ok.get(), measured.overLimit.get(), measured.local.get(),
                measured.errors.get(), latency.getValueAtPercentile(50) / 1e3, latency.getValueAtPercentile(90) / 1e3,
                latency.getValueAtPercentile(99) / 1e3, latency.getValueAtPercentile(99.9) / 1e3, latency.getMaxValue() / 1e3));
            if (measured.errors.get() > 0)
            {
                err.println("limiter rls bench: first error: " + measured.firstError);
            }
            return measured.ok.get() + measured.overLimit.get() == 0 ? 1 : 0;
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
    private void drive(final List<RateLimitServiceGrpc.RateLimitServiceStub> stubs, final RateLimitRequest[] requests, final int seconds,
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
            stubs.get((int)(i % stubs.size())).withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS)
                .shouldRateLimit(requests[(int)(i % requests.length)], tally.observer(due));
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
        final AtomicLong ok = new AtomicLong();
        final AtomicLong overLimit = new AtomicLong();
        final AtomicLong local = new AtomicLong();
        final AtomicLong errors = new AtomicLong();
        final Recorder latency = new Recorder(3);
        volatile String firstError;

        long answered()
        {
            return ok.get() + overLimit.get() + errors.get();
        }

        StreamObserver<RateLimitResponse> observer(final long due)
        {
            return new StreamObserver<>()
            {
                @Override
                public void onNext(final RateLimitResponse response)
                {
                    latency.recordValue(Math.max(0, System.nanoTime() - due));
                    (response.getOverallCode() == RateLimitResponse.Code.OVER_LIMIT ? overLimit : ok).incrementAndGet();
                    if (response.hasDynamicMetadata())
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
