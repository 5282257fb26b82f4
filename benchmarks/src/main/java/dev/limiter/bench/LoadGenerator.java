package dev.limiter.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.limiter.cli.TlsOptions;
import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.time.LocalTime;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import javax.net.ssl.SSLContext;

/**
 * {@code ./limiter bench}: drives a store through the SDK and reports throughput and latency.
 *
 * <p>Closed loop (default): {@code connections x pipeline} lanes each keep one acquire in flight and
 * send the next when the answer arrives. Latency is recorded per decision from the caller's side
 * with HdrHistogram's coordinated-omission correction ({@code copyCorrectedForCoordinatedOmission})
 * applied to the whole run, using the mean per-lane interval measured during warm-up as the expected
 * interval. Open loop ({@code --rate R}): acquires are issued on a fixed
 * schedule of R per second and each latency is measured from its intended start, so a stall is
 * charged to every request it delayed (below 20,000/s, {@code --warm-calls} calls at that rate come
 * first, so that the generator's own code is compiled before it measures). Blocking threads
 * ({@code --blocking-threads N}): N threads each call {@code acquireBlocking} in a closed loop, as a service's request threads do; latency
 * is per call from the caller's thread, corrected for coordinated omission as in closed loop.
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = {
        "Load-generates against store node(s) through the SDK; stops by itself",
        "after --warmup + --duration seconds. Prints a progress line per second,",
        "a line per --server node, and last one JSON object:",
        "  decisionsPerSec, p50Us, p99Us, p999Us, maxUs, allowed, denied, errors;",
        "  degraded: decisions the SDK made itself while no node answered",
        "    (counted in allowed/denied too);",
        "  maxNodeUs, maxSdkUs: the slowest call a node decided, and the slowest",
        "    the SDK decided itself;",
        "  sdkRedirects: frames a node answered NOT_LEADER (calls retried elsewhere);",
        "  sdkOverloadedFrames: frames a node answered OVERLOADED (its log was behind;",
        "    the SDK sent their calls again after a backoff, within the deadline);",
        "  fromTokenLeases, tokenLeaseShare: decisions the SDK made from token blocks",
        "    (a tokenLease policy, e.g. --route /bench-lease), and their share;",
        "  nodes: per --server, its role at the end, cpuUsPerDecision (the",
        "    node's CPU over the decisions nodes made), cpuCores,",
        "    decisionFramesPerSec and redirects (frames answered NOT_LEADER),",
        "    read over STATUS at the start and the end of the measured window;",
        "  pacerLateP50Us, pacerLateP99Us: open loop, how late the generator issued",
        "    calls after their intended start (already inside every latency);",
        "  mode: closed-loop, open-loop or blocking-threads (lanes: the threads);",
        "  and the settings used."},
    sortOptions = false)
public final class LoadGenerator implements Callable<Integer>
{
    @picocli.CommandLine.Mixin
    TlsOptions tls = new TlsOptions();

    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT", description = "Store node(s) (default: 127.0.0.1:7400).")
    List<String> servers = List.of("127.0.0.1:7400");

    @Option(names = "--connections", description = "SDK connections (default: ${DEFAULT-VALUE}).")
    int connections = 8;

    @Option(names = "--duration", description = "Measured seconds (default: ${DEFAULT-VALUE}).")
    int durationSeconds = 10;

    @Option(names = "--warmup", description = "Warm-up seconds, not measured (default: ${DEFAULT-VALUE}).")
    int warmupSeconds = 3;

    @Option(names = "--keys", description = "Distinct tenants (one bucket each) (default: ${DEFAULT-VALUE}).")
    int keys = 10_000;

    @Option(names = "--pipeline", description = "Acquires in flight per connection in closed loop (default: ${DEFAULT-VALUE}).")
    int pipeline = 64;

    @Option(names = "--rate", description = "Open loop: target acquires per second (0 = closed loop) (default: ${DEFAULT-VALUE}).")
    long rate = 0;

    @Option(names = "--pacer-spin-us", description = "Open loop: the pacer spins instead of parking for the last this many " +
        "microseconds before each call is due, 0 to 10000: a park wakes up to the kernel's timer slack (50 us) plus a " +
        "wake-up late, and open loop charges that to the call; spinning costs the generator up to this much CPU per call " +
        "(default: 5%% of the interval between calls, at least 60 and at most 500: 250 at 200/s, 60 at 2,000/s).")
    Long pacerSpinMicros;

    @Option(names = "--warm-calls", description = "Open loop below " + WARM_CALL_RATE + "/s: calls issued at " +
        WARM_CALL_RATE + "/s, and waits for their answers, before the --warmup seconds at --rate, so that the " +
        "generator's own code is compiled before it measures (0: none, a cold generator) (default: ${DEFAULT-VALUE}).")
    long warmCalls = 40_000;

    @Option(names = "--cost", description = "Tokens per acquire (default: ${DEFAULT-VALUE}).")
    int cost = 1;

    @Option(names = "--hot-share", paramLabel = "PERCENT", description = "Share of calls, 0 to 100, that go to one hot " +
        "tenant (tenant-0); the rest spread over --keys as usual (default: ${DEFAULT-VALUE}).")
    int hotShare = 0;

    @Option(names = "--route", description = "Route prefix; acquires go to PREFIX/<n> (default: ${DEFAULT-VALUE}).")
    String routePrefix = "/bench";

    @Option(names = "--io-threads", description = "SDK I/O threads (default: ${DEFAULT-VALUE}).")
    int ioThreads = 1;

    @Option(names = "--max-batch", description = "Most acquires per frame (default: ${DEFAULT-VALUE}).")
    int maxBatch = LimiterClient.DEFAULT_MAX_BATCH;

    @Option(names = "--blocking-threads", description = "Instead of pipelined async calls: N threads each calling " +
        "acquireBlocking in a closed loop, like a service's request threads (0: off) (default: ${DEFAULT-VALUE}).")
    int blockingThreads = 0;

    @Option(names = "--redis", paramLabel = "HOST:PORT", description = "With --blocking-threads: call this Redis instead, as " +
        "the classic design does (one Jedis connection per thread, EVALSHA of the Lua token bucket in the tools jar, " +
        "rate and burst from --redis-rate, key per tenant), for a comparison in the same run conditions.")
    String redis;

    @Option(names = "--redis-rate", description = "With --redis: the script's rate per second and burst (default: ${DEFAULT-VALUE}).")
    long redisRate = 1000;

    @Option(names = "--deadline-ms", description = "Per-call deadline in ms (default: ${DEFAULT-VALUE}).")
    long deadlineMs = 1000;

    private static final long MAX_LATENCY_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** Open loop: the rate of the calls that warm the generator's code before the warm-up at --rate. */
    static final long WARM_CALL_RATE = 20_000;
    private final Recorder recorder = new Recorder(MAX_LATENCY_NANOS, 3);
    /** Open loop: how late the pacer issued each request after its intended start (part of each latency). */
    private final Recorder issueLateness = new Recorder(MAX_LATENCY_NANOS, 3);
    private final LongAdder allowed = new LongAdder();
    private final LongAdder denied = new LongAdder();
    private final LongAdder errors = new LongAdder();
    /** Decisions the SDK made on its own (no node answered): counted in allowed/denied too. */
    private final LongAdder degraded = new LongAdder();
    /** Decisions the SDK made from token blocks (tokenLease policies, --blocking-threads): counted in allowed too. */
    private final LongAdder fromTokenLeases = new LongAdder();
    /** Slowest measured call a node decided, and slowest the SDK decided itself (ns). */
    private final LongAccumulator slowestByNode = new LongAccumulator(Math::max, 0);
    private final LongAccumulator slowestBySdk = new LongAccumulator(Math::max, 0);
    private final Map<String, LongAdder> errorKinds = new ConcurrentHashMap<>();
    private final AtomicBoolean measuring = new AtomicBoolean();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong expectedIntervalNanos = new AtomicLong();
    private Descriptor[] descriptors;
    /** For the STATUS readings of each node: null without TLS. */
    private SSLContext tlsContext;
    private final ScheduledExecutorService retries =
        Executors.newSingleThreadScheduledExecutor(r ->
        {
            final Thread t = new Thread(r, "bench-retry");
            t.setDaemon(true);
            return t;
        });

    /** An option's value and the range it must lie in (most: Long.MAX_VALUE when unbounded). */
    private record Range(String option, long value, long least, long most)
    {
        boolean holds()
        {
            return value >= least && value <= most;
        }

        @Override
        public String toString()
        {
            return option + " must be " + (most == Long.MAX_VALUE ? "at least " + least : least + " to " + most) + ", was " + value;
        }
    }

    /** The first option out of its range, said with its range and value; null when all are in range. */
    String outOfRange()
    {
        final List<Range> ranges = List.of(
            new Range("--connections", connections, 1, Long.MAX_VALUE), new Range("--duration", durationSeconds, 1, Long.MAX_VALUE),
            new Range("--keys", keys, 1, Long.MAX_VALUE), new Range("--pipeline", pipeline, 1, Long.MAX_VALUE),
            new Range("--cost", cost, 1, Long.MAX_VALUE), new Range("--warmup", warmupSeconds, 0, Long.MAX_VALUE),
            new Range("--rate", rate, 0, Long.MAX_VALUE), new Range("--warm-calls", warmCalls, 0, Long.MAX_VALUE),
            new Range("--blocking-threads", blockingThreads, 0, Long.MAX_VALUE), new Range("--hot-share", hotShare, 0, 100),
            new Range("--pacer-spin-us", pacerSpinMicros == null ? 0 : pacerSpinMicros, 0, 10_000));
        return ranges.stream().filter(range -> !range.holds()).findFirst().map(Range::toString).orElse(null);
    }

    @Override
    public Integer call() throws Exception
    {
        final String outOfRange = outOfRange();
        if (outOfRange != null)
        {
            System.err.println("limiter bench: " + outOfRange);
            return 2;
        }
        if (redis != null && blockingThreads == 0)
        {
            System.err.println("limiter bench: --redis needs --blocking-threads N (a Redis client thread waits for each answer)");
            return 2;
        }
        if (blockingThreads > 0 && rate > 0)
        {
            System.err.println("limiter bench: --blocking-threads is a closed loop of its own; drop --rate (open loop) or it");
            return 2;
        }
        if (redis != null)
        {
            final RedisCallers callers;
            try
            {
                callers = new RedisCallers(redis, redisRate, cost);
            }
            catch (final IllegalArgumentException e)
            {
                System.err.println("limiter bench: " + e.getMessage());
                return 2;
            }
            return blockingLoop(null, callers::caller);
        }
        descriptors = new Descriptor[keys];
        for (int i = 0; i < keys; i++)
        {
            descriptors[i] = Descriptor.builder().tenant("tenant-" + i).route(routePrefix + "/" + i).method("GET").build();
        }
        final LimiterClient client;
        try
        {
            tlsContext = tls.contextOrNull();
            client = tls.applyTo(LimiterClient.builder().endpoints(servers.toArray(new String[0])).connections(connections)
                .ioThreads(ioThreads).maxBatch(maxBatch).deadline(Duration.ofMillis(deadlineMs))).build();
        }
        catch (final IllegalArgumentException e)
        {
            System.err.println("limiter bench: " + e.getMessage());
            return 2;
        }
        try (client)
        {
            if (client.stats().openConnections() == 0 && !client.awaitConnected(Duration.ofSeconds(2)))
            {
                System.err.println("limiter bench: cannot connect to " + servers + "; is a node running? (./limiter server)");
                return 1;
            }
            return rate > 0 ? openLoop(client) : blockingThreads > 0 ? blockingLoop(client) : closedLoop(client);
        }
    }

    private int closedLoop(final LimiterClient client) throws InterruptedException
    {
        final int lanes = connections * pipeline;
        for (int lane = 0; lane < lanes; lane++)
        {
            issue(client, lane, lane % keys);
        }
        final long warmupStart = System.nanoTime();
        final long warmupDone = warmup();
        // Expected interval per lane = lanes / throughput, from the warm-up.
        final long warmupNanos = Math.max(1, System.nanoTime() - warmupStart);
        expectedIntervalNanos.set(warmupDone > 0 ? lanes * warmupNanos / warmupDone : 0);
        return measure(client, "closed-loop", lanes);
    }

    /**
     * One caller thread's way of deciding, blocking until it has the answer (a thread each: it
     * need not be thread-safe).
     */
    interface BlockingCaller extends AutoCloseable
    {
        /** Decides for tenant {@code key}: {@link #ALLOWED} or {@link #DENIED}, plus {@link #DEGRADED} when not a node's. */
        int call(int key) throws Exception;

        @Override
        default void close()
        {
        }

        int DENIED = 0;
        int ALLOWED = 1;
        int DEGRADED = 2;
        /** Decided by the SDK from a token block the cluster granted it (a tokenLease policy). */
        int FROM_TOKEN_LEASE = 4;
    }

    /** The open-loop driver's next key (its thread only). */
    private int openLoopKey;

    /** The hot tenant (key 0) for --hot-share percent of calls, else {@code key}. */
    private int hotOr(final int key)
    {
        return hotShare > 0 && ThreadLocalRandom.current().nextInt(100) < hotShare ? 0 : key;
    }

    /** N caller threads of the SDK, each in a closed loop of {@code acquireBlocking}. */
    private int blockingLoop(final LimiterClient client) throws InterruptedException
    {
        return blockingLoop(client, thread -> key ->
        {
            final Decision d = client.acquireBlocking(descriptors[key], cost);
            return (d.allowed() ? BlockingCaller.ALLOWED : BlockingCaller.DENIED) | (d.degraded() ? BlockingCaller.DEGRADED : 0) |
                (d.fromTokenLease() ? BlockingCaller.FROM_TOKEN_LEASE : 0);
        });
    }

    /**
     * {@link #blockingThreads} threads, each with the caller {@code callers} makes for it, in a
     * closed loop over the keys; measured like the closed loop.
     *
     * @param client the SDK client, for its redirect count and the nodes' readings; null for Redis
     */
    int blockingLoop(final LimiterClient client, final java.util.function.IntFunction<BlockingCaller> callers)
        throws InterruptedException
    {
        final Thread[] threads = new Thread[blockingThreads];
        for (int t = 0; t < blockingThreads; t++)
        {
            final int thread = t;
            threads[t] = new Thread(() ->
            {
                try (BlockingCaller caller = callers.apply(thread))
                {
                    int key = thread % keys;
                    while (running.get())
                    {
                        final long start = System.nanoTime();
                        try
                        {
                            final int outcome = caller.call(hotOr(key));
                            if ((outcome & BlockingCaller.FROM_TOKEN_LEASE) != 0)
                            {
                                fromTokenLeases.increment();
                            }
                            recordOutcome((outcome & BlockingCaller.ALLOWED) != 0, (outcome & BlockingCaller.DEGRADED) != 0, null, start);
                        }
                        catch (final Exception e)
                        {
                            recordOutcome(false, false, e, start);
                            LockSupport.parkNanos(1_000_000); // a failing store is not spun on
                        }
                        key = (key + 7919) % keys;
                    }
                }
                catch (final RuntimeException e)
                {
                    recordOutcome(false, false, e, System.nanoTime()); // could not even start (no such Redis)
                }
            }, "bench-caller-" + t);
            threads[t].setDaemon(true);
            threads[t].start();
        }
        final long warmupStart = System.nanoTime();
        final long warmupDone = warmup();
        final long warmupNanos = Math.max(1, System.nanoTime() - warmupStart);
        expectedIntervalNanos.set(warmupDone > 0 ? blockingThreads * warmupNanos / warmupDone : 0);
        final int status = measure(client, client == null ? "blocking-threads-redis" : "blocking-threads", blockingThreads);
        for (final Thread thread : threads)
        {
            thread.join(2000);
        }
        return status;
    }

    private long warmup() throws InterruptedException
    {
        final long before = allowed.sum() + denied.sum();
        Thread.sleep(TimeUnit.SECONDS.toMillis(warmupSeconds));
        return allowed.sum() + denied.sum() - before;
    }

    private void issue(final LimiterClient client, final int lane, final int key)
    {
        if (!running.get())
        {
            return;
        }
        final long start = System.nanoTime();
        client.acquire(descriptors[hotOr(key)], cost).whenComplete((decision, failure) ->
        {
            record(decision, failure, start);
            if (failure == null)
            {
                issue(client, lane, (key + 7919) % keys);
            }
            else
            {
                // A failed call may have completed synchronously: re-issue later, never recursively.
                retries.schedule(() -> issue(client, lane, (key + 7919) % keys), 1, TimeUnit.MILLISECONDS);
            }
        });
    }

    private void record(final Decision decision, final Throwable failure, final long intendedStart)
    {
        recordOutcome(decision != null && decision.allowed(), decision != null && decision.degraded(), failure, intendedStart);
    }

    /** One call's outcome: allowed or not, decided by the SDK itself (degraded) or not, or its failure. */
    void recordOutcome(final boolean wasAllowed, final boolean wasDegraded, final Throwable failure, final long intendedStart)
    {
        final long latency = System.nanoTime() - intendedStart;
        if (failure != null)
        {
            errors.increment();
            final Throwable cause = failure.getCause() != null && failure instanceof CompletionException ?
                failure.getCause() : failure;
            errorKinds.computeIfAbsent(cause.getClass().getSimpleName() + ": " + cause.getMessage(), k -> new LongAdder()).increment();
        }
        else
        {
            (wasAllowed ? allowed : denied).increment();
            if (wasDegraded)
            {
                degraded.increment();
            }
        }
        if (measuring.get())
        {
            if (failure == null)
            {
                (wasDegraded ? slowestBySdk : slowestByNode).accumulate(latency);
            }
            // Raw here; the closed-loop correction for coordinated omission is applied once at the end.
            recorder.recordValue(Math.min(latency, MAX_LATENCY_NANOS));
        }
    }

    private int openLoop(final LimiterClient client) throws InterruptedException
    {
        final CountDownLatch compiled = new CountDownLatch(1);
        final Thread driver = new Thread(() ->
        {
            // A fresh generator runs its own and the SDK's code interpreted or half-compiled for its first
            // tens of thousands of calls, and at 200/s a few seconds of warm-up are far fewer: it is the
            // generator's tail that the run would then measure, not the store's. Same path, faster first.
            try
            {
                if (warmCalls > 0 && rate < WARM_CALL_RATE)
                {
                    final long answeredBefore = answered();
                    pace(client, WARM_CALL_RATE, warmCalls);
                    // Every warm call ends (answered, or failed at its deadline) before the calls at --rate
                    // start: none of them may land in the measured window, even with --warmup 0.
                    final long endsBy = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(deadlineMs + 1000);
                    while (answered() - answeredBefore < warmCalls && System.nanoTime() - endsBy < 0 && running.get())
                    {
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                    }
                }
            }
            finally
            {
                compiled.countDown(); // also if the warm calls failed: the run still ends on time
            }
            pace(client, rate, Long.MAX_VALUE);
        }, "bench-open-loop");
        driver.setDaemon(true);
        driver.start();
        compiled.await();
        warmup();
        final int status = measure(client, "open-loop", 0);
        driver.join(2000);
        return status;
    }

    /** Calls ended so far: allowed, denied or failed. */
    private long answered()
    {
        return allowed.sum() + denied.sum() + errors.sum();
    }

    /** The pacer's default spin before each call: at least this long, and at most {@link #MAX_PACER_SPIN_NANOS}. */
    static final long MIN_PACER_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(60);
    static final long MAX_PACER_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(500);

    /**
     * How long before each call is due the pacer stops parking and spins, by default: 5% of the
     * interval between calls (5% of a core), at least {@link #MIN_PACER_SPIN_NANOS} (so 12% of a core
     * at 2,000/s) and at most {@link #MAX_PACER_SPIN_NANOS}. A park can oversleep by more than the
     * minimum spin on a busy machine, and at low rates the interval leaves room for a longer spin
     * (docs/performance.md has the measurements).
     */
    static long defaultSpinNanos(final long perSecond)
    {
        return Math.max(MIN_PACER_SPIN_NANOS, Math.min(MAX_PACER_SPIN_NANOS, 1_000_000_000L / 20 / Math.max(1, perSecond)));
    }

    /** Issues up to {@code calls} acquires on a schedule of {@code perSecond}, until the run ends. */
    private void pace(final LimiterClient client, final long perSecond, final long calls)
    {
        final long start = System.nanoTime();
        final double nanosPerRequest = 1e9 / perSecond;
        final long spinNanos = pacerSpinMicros != null ? TimeUnit.MICROSECONDS.toNanos(pacerSpinMicros) : defaultSpinNanos(perSecond);
        long issued = 0;
        while (running.get() && issued < calls)
        {
            // Request i is due at start + i x interval. A park wakes up to the kernel's timer slack late
            // (50 us by default), and open loop charges that to the request: park until a margin before
            // the next one is due, then spin the rest.
            final long nextDue = start + (long)(issued * nanosPerRequest);
            final long early = nextDue - System.nanoTime();
            if (early > spinNanos)
            {
                LockSupport.parkNanos(early - spinNanos);
                continue;
            }
            if (early > 0)
            {
                Thread.onSpinWait();
                continue;
            }
            final long now = System.nanoTime();
            for (; running.get() && issued < calls; issued++)
            {
                final long intended = start + (long)(issued * nanosPerRequest);
                if (intended > now)
                {
                    break;
                }
                if (measuring.get())
                {
                    issueLateness.recordValue(Math.min(now - intended, MAX_LATENCY_NANOS));
                }
                client.acquire(descriptors[hotOr(openLoopKey)], cost).whenComplete((d, f) -> record(d, f, intended));
                openLoopKey = (openLoopKey + 7919) % keys;
            }
        }
    }

    private int measure(final LimiterClient client, final String mode, final int lanes) throws InterruptedException
    {
        // STATUS readings first and last: the window's counts and clock lie between them.
        final List<String> nodeServers = client == null ? List.of() : servers; // Redis: no node to read
        final List<NodeCounters> nodesBefore = NodeCounters.readAll(nodeServers, tlsContext);
        recorder.reset();
        issueLateness.reset();
        slowestByNode.reset();
        slowestBySdk.reset();
        final long allowed0 = allowed.sum();
        final long denied0 = denied.sum();
        final long errors0 = errors.sum();
        final long degraded0 = degraded.sum();
        final long leased0 = fromTokenLeases.sum();
        final long redirects0 = client == null ? 0 : client.stats().redirects();
        final long overloaded0 = client == null ? 0 : client.stats().overloadedFrames();
        final long ownCpu0 = ownCpuNanos();
        measuring.set(true);
        final long start = System.nanoTime();
        final Histogram total = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
        Histogram interval = null;
        long lastDecisions = 0;
        for (int s = 1; s <= durationSeconds; s++)
        {
            Thread.sleep(1000);
            interval = recorder.getIntervalHistogram(interval);
            total.add(interval);
            final long decisions = allowed.sum() - allowed0 + denied.sum() - denied0;
            // at= (local wall-clock time) lines the seconds up with the nodes' logs and a drill's kills.
            System.out.printf(Locale.ROOT, "t=%ds decisions/s=%d p50Us=%.1f p99Us=%.1f maxUs=%.1f errors=%d degraded=%d at=%s%n", s,
                decisions - lastDecisions, interval.getValueAtPercentile(50) / 1e3, interval.getValueAtPercentile(99) / 1e3,
                interval.getMaxValue() / 1e3, errors.sum() - errors0, degraded.sum() - degraded0,
                LocalTime.now().truncatedTo(ChronoUnit.SECONDS));
            lastDecisions = decisions;
        }
        measuring.set(false);
        final double seconds = (System.nanoTime() - start) / 1e9;
        final long a = allowed.sum() - allowed0;
        final long d = denied.sum() - denied0;
        final long e = errors.sum() - errors0;
        final long g = degraded.sum() - degraded0;
        final long fromLeases = fromTokenLeases.sum() - leased0;
        final long redirected = client == null ? 0 : client.stats().redirects() - redirects0;
        final long overloaded = client == null ? 0 : client.stats().overloadedFrames() - overloaded0;
        final long ownCpu = ownCpu0 < 0 ? -1 : ownCpuNanos() - ownCpu0;
        final List<NodeCounters> nodesAfter = NodeCounters.readAll(nodeServers, tlsContext);
        running.set(false);
        interval = recorder.getIntervalHistogram(interval);
        total.add(interval);
        final Histogram late = issueLateness.getIntervalHistogram();
        final Histogram reported = expectedIntervalNanos.get() > 0 ?
            total.copyCorrectedForCoordinatedOmission(expectedIntervalNanos.get()) : total;
        // The SDK's own decisions (degraded, from token blocks) cost the nodes nothing.
        final long nodeDecisions = a + d - g - fromLeases;
        final StringJoiner nodes = new StringJoiner(",", "[", "]");
        for (int i = 0; i < nodesAfter.size(); i++)
        {
            final String node = nodesAfter.get(i).report(nodesBefore.get(i), nodeDecisions, seconds);
            System.out.println("node " + node);
            nodes.add(node);
        }
        if (!errorKinds.isEmpty())
        {
            errorKinds.forEach((kind, n) -> System.err.println("errors: " + n.sum() + " x " + kind));
        }
        System.out.printf(Locale.ROOT,
            "{\"decisionsPerSec\":%.0f,\"p50Us\":%.1f,\"p99Us\":%.1f,\"p999Us\":%.1f,\"maxUs\":%.1f,\"allowed\":%d,\"denied\":%d," +
            "\"errors\":%d,\"degraded\":%d,\"mode\":\"%s\",\"connections\":%d,\"pipeline\":%d,\"lanes\":%d,\"rate\":%d,\"keys\":%d,\"hotShare\":%d," +
            "\"durationSec\":%.1f,\"coCorrectionIntervalUs\":%.1f,\"rawP50Us\":%.1f,\"rawP99Us\":%.1f,\"rawP999Us\":%.1f," +
            "\"maxNodeUs\":%.1f,\"maxSdkUs\":%.1f,\"sdkRedirects\":%d,\"sdkOverloadedFrames\":%d,\"fromTokenLeases\":%d,\"tokenLeaseShare\":%.4f," +
            "\"pacerLateP50Us\":%.1f,\"pacerLateP99Us\":%.1f,\"generatorCpuUsPerDecision\":%.2f,\"generatorCpuCores\":%.2f," +
            "\"nodes\":%s}%n",
            (a + d) / seconds, reported.getValueAtPercentile(50) / 1e3, reported.getValueAtPercentile(99) / 1e3,
            reported.getValueAtPercentile(99.9) / 1e3, reported.getMaxValue() / 1e3, a, d, e, g, mode, connections,
            rate > 0 || blockingThreads > 0 ? 0 : pipeline, lanes, rate, keys, hotShare, seconds, expectedIntervalNanos.get() / 1e3,
            total.getValueAtPercentile(50) / 1e3, total.getValueAtPercentile(99) / 1e3, total.getValueAtPercentile(99.9) / 1e3,
            slowestByNode.get() / 1e3, slowestBySdk.get() / 1e3, redirected, overloaded, fromLeases, a + d == 0 ? 0.0 : (double)fromLeases / (a + d),
            late.getValueAtPercentile(50) / 1e3, late.getValueAtPercentile(99) / 1e3,
            ownCpu < 0 || a + d == 0 ? -1.0 : ownCpu / 1e3 / (a + d), ownCpu < 0 ? -1.0 : ownCpu / 1e9 / seconds, nodes);
        return 0;
    }

    /**
     * This process's CPU time so far (every thread: the SDK's, the callers', the collector's), or -1
     * where the JVM does not tell: what the client side costs per decision, next to the nodes'.
     */
    private static long ownCpuNanos()
    {
        return ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os ? os.getProcessCpuTime() : -1;
    }

    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new LoadGenerator()).execute(args));
    }
}
