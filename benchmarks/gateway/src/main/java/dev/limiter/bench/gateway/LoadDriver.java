package dev.limiter.bench.gateway;

import io.netty.handler.codec.http.HttpHeaderNames;
import reactor.core.publisher.Mono;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.resources.LoopResources;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The load generator: HTTP GETs to the gateway's bench route, each naming a tenant in {@code X-Tenant},
 * for a warm-up and then a measured window, and one JSON line of the window ({@link Tally#json}).
 *
 * <ul>
 *   <li>{@code --rate R}: open loop, R requests per second on a fixed schedule ({@link Pacer}); each
 *       latency from when the request was due, so a stall counts against every request it delayed.</li>
 *   <li>{@code --connections N}: closed loop (saturation), N connections each sending the next request
 *       when the answer to the last arrives; each latency from its send, throughput is what the gateway
 *       managed.</li>
 * </ul>
 *
 * <p>Tenants: request {@code i} goes to {@code tenant-0} when {@code i mod 100 < --hot-share}, else to
 * one of {@code tenant-1 .. tenant-(K-1)} in turn, so a run's 429s can be checked against the policy.
 */
public final class LoadDriver
{
    private static final List<String> OPTIONS = List.of("--target", "--rate", "--connections", "--warmup",
        "--duration", "--tenants", "--hot-share", "--config", "--round", "--uptime");

    private final Map<String, String> options;
    private final AtomicLong requestIndex = new AtomicLong();
    private final int tenants;
    private final int hotShare;
    private final String[] tenantNames;
    private volatile boolean running = true;

    LoadDriver(final Map<String, String> options)
    {
        this.options = options;
        this.tenants = intOption("--tenants", 100, 1, 1_000_000);
        this.hotShare = intOption("--hot-share", 0, 0, 100);
        this.tenantNames = new String[tenants];
        for (int i = 0; i < tenants; i++)
        {
            tenantNames[i] = "tenant-" + i;
        }
    }

    /** Parses {@code --name value} pairs; throws IllegalArgumentException naming what was wrong. */
    static Map<String, String> parse(final String[] args)
    {
        final Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i += 2)
        {
            if (!OPTIONS.contains(args[i]))
            {
                throw new IllegalArgumentException("unknown option " + args[i] + " (options: " + OPTIONS + ")");
            }
            if (i + 1 >= args.length)
            {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            options.put(args[i], args[i + 1]);
        }
        if (options.containsKey("--rate") == options.containsKey("--connections"))
        {
            throw new IllegalArgumentException("give one of --rate R (open loop) or --connections N (closed loop)");
        }
        return options;
    }

    int intOption(final String name, final int defaultValue, final int least, final int most)
    {
        final String text = options.get(name);
        if (text == null)
        {
            return defaultValue;
        }
        final int value;
        try
        {
            value = Integer.parseInt(text);
        }
        catch (final NumberFormatException e)
        {
            throw new IllegalArgumentException(name + " must be a whole number, was " + text);
        }
        if (value < least || value > most)
        {
            throw new IllegalArgumentException(name + " must be " + least + " to " + most + ", was " + value);
        }
        return value;
    }

    /** The tenant of request {@code index}: the hot tenant for --hot-share percent, the others in turn. */
    String tenantOf(final long index)
    {
        if (index % 100 < hotShare || tenants == 1)
        {
            return tenantNames[0];
        }
        return tenantNames[1 + (int)(index % (tenants - 1))];
    }

    public static void main(final String[] args) throws InterruptedException
    {
        final LoadDriver driver;
        try
        {
            driver = new LoadDriver(parse(args));
        }
        catch (final IllegalArgumentException e)
        {
            System.err.println("LoadDriver: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.exit(driver.run());
    }

    int run() throws InterruptedException
    {
        final String target = options.getOrDefault("--target", "http://127.0.0.1:18080/bench/item");
        final int warmup = intOption("--warmup", 10, 0, 600);
        final int duration = intOption("--duration", 20, 1, 3600);
        final int round = intOption("--round", 0, 0, 1000);
        final boolean open = options.containsKey("--rate");
        final int rate = open ? intOption("--rate", 0, 1, 1_000_000) : 0;
        final int connections = open ? 256 : intOption("--connections", 0, 1, 4096);
        final ConnectionProvider pool = ConnectionProvider.builder("bench").maxConnections(connections)
            .pendingAcquireMaxCount(-1).pendingAcquireTimeout(Duration.ofSeconds(30)).build();
        final LoopResources loops = LoopResources.create("bench-io", 1, true);
        final HttpClient client = HttpClient.create(pool).runOn(loops).responseTimeout(Duration.ofSeconds(10));
        try
        {
            final Tally warm = new Tally();
            final Tally measured = new Tally();
            final long start = System.nanoTime();
            final long measureFrom = start + TimeUnit.SECONDS.toNanos(warmup);
            final long end = measureFrom + TimeUnit.SECONDS.toNanos(duration);
            if (open)
            {
                openLoop(client, target, new Pacer(rate, start), end, measureFrom, warm, measured);
            }
            else
            {
                for (int lane = 0; lane < connections; lane++)
                {
                    closedLoopNext(client, target, end, measureFrom, warm, measured);
                }
                Thread.sleep(TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime()) + 1);
                running = false;
            }
            // The answers still due (open loop: those sent before the end) are waited for, 10 s at most.
            final long sent = requestIndex.get();
            final long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(11);
            while (warm.ended() + measured.ended() < sent && System.nanoTime() < waitUntil)
            {
                Thread.sleep(5);
            }
            final String load = open ? "open-" + rate : "closed-" + connections;
            System.out.println(measured.json(options.getOrDefault("--config", "?"), load, round, duration,
                options.getOrDefault("--uptime", "")));
            if (measured.firstProblem() != null)
            {
                System.err.println("LoadDriver: first problem: " + measured.firstProblem());
            }
            return measured.answers() == 0 ? 1 : 0;
        }
        finally
        {
            pool.disposeLater().block(Duration.ofSeconds(5));
            loops.disposeLater().block(Duration.ofSeconds(5));
        }
    }

    private void openLoop(final HttpClient client, final String target, final Pacer pacer, final long end,
        final long measureFrom, final Tally warm, final Tally measured)
    {
        while (true)
        {
            final long due = pacer.awaitNext();
            if (due >= end)
            {
                return;
            }
            final Tally tally = due < measureFrom ? warm : measured;
            send(client, target, requestIndex.getAndIncrement()).subscribe(
                status -> tally.answered(status, System.nanoTime() - due), tally::failed);
        }
    }

    private void closedLoopNext(final HttpClient client, final String target, final long end,
        final long measureFrom, final Tally warm, final Tally measured)
    {
        final long sentAt = System.nanoTime();
        if (!running || sentAt >= end)
        {
            return;
        }
        final Tally tally = sentAt < measureFrom ? warm : measured;
        send(client, target, requestIndex.getAndIncrement()).subscribe(
            status ->
            {
                tally.answered(status, System.nanoTime() - sentAt);
                closedLoopNext(client, target, end, measureFrom, warm, measured);
            },
            failure ->
            {
                tally.failed(failure);
                closedLoopNext(client, target, end, measureFrom, warm, measured);
            });
    }

    /** One GET for request {@code index}'s tenant: its status, once the whole answer has been read. */
    private Mono<Integer> send(final HttpClient client, final String target, final long index)
    {
        final String tenant = tenantOf(index);
        return client.headers(headers -> headers.set(BenchGatewayApplication.TENANT_HEADER, tenant)
                .set(HttpHeaderNames.ACCEPT, "*/*"))
            .get().uri(target)
            .responseSingle((response, body) -> body.then(Mono.just(response.status().code())));
    }
}
