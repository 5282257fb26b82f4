package dev.limiter.client;

import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.protocol.policy.TokenLease;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A caller that picks a new key on every call (a service that copies a header into the tenant), at
 * the SDK's tables keyed by what callers send: the token-lease keys ({@code tryLocal} then
 * {@code toAsk}, what {@code acquireBlocking} does before its round trip), the fast-rejection table
 * (a refused call: look up, then remember the refusal) and the emergency budgets (a local decision
 * while no node answers). Sampled per call, so the percentiles show a call that pays for a scan or a
 * clear of its table; {@link #newDescriptorOnly} is what building the new descriptor costs of that.
 * After each iteration the forked JVM prints its used heap after a GC: the tables' keys stay from
 * one iteration to the next, so a table that keeps growing shows there. In the client's package to
 * reach the package-private tables.
 *
 * <pre>./limiter jmh KeyChurnBenchmark -wi 2 -i 3 -f 1</pre>
 */
@State(org.openjdk.jmh.annotations.Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
public class KeyChurnBenchmark
{
    private static final Decision REFUSED = new Decision(false, ReasonCode.RATE_LIMITED, 0, 100, 100_000_000L, 100_000_000L, "orders", 1, 1);

    private TokenBlocks leases;
    private LocalRejections rejections;
    private LocalFallback fallback;
    private long next;

    @Setup(Level.Trial)
    public void setUp()
    {
        // Every tenant has its own bucket under "orders": each new tenant is a new key of each table.
        final PolicySet set = PolicySet.newBuilder().setVersion(3)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setOwner("infra"))
            .addPolicies(Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
                .setRate(1_000).setBurst(1_000).setScope(Scope.TENANT).setOwner("team")
                .setTokenLease(TokenLease.newBuilder().setMaxSharePercent(10)))
            .build();
        final PolicyCache cache = new PolicyCache(Duration.ofHours(1), System::nanoTime);
        cache.received(3, set.toByteArray());
        leases = new TokenBlocks(cache, System::nanoTime, (descriptor, block) -> new CompletableFuture<>());
        leases.prepare();
        rejections = new LocalRejections();
        fallback = new LocalFallback(cache, System::nanoTime, 1_000_000_000L, null, () -> 0);
        fallback.prepare();
    }

    private Descriptor newTenant()
    {
        return Descriptor.builder().tenant("t-" + next++).route("/v1/orders/1").method("GET").build();
    }

    @Benchmark
    public Descriptor newDescriptorOnly()
    {
        return newTenant();
    }

    @Benchmark
    public int tokenLeasesNewKey()
    {
        final Descriptor call = newTenant();
        final Decision local = leases.tryLocal(call, 1);
        return local != null ? 0 : leases.toAsk(call, 1);
    }

    @Benchmark
    public Decision fastRejectionNewKey()
    {
        final Descriptor call = newTenant();
        final long now = System.nanoTime();
        final Decision known = rejections.stillDenied(call, 1, now);
        if (known == null)
        {
            rejections.denied(call, 1, REFUSED, now);
        }
        return known;
    }

    @Benchmark
    public Decision emergencyBudgetNewKey()
    {
        return fallback.decide(newTenant(), 1, "bench");
    }

    @TearDown(Level.Iteration)
    public void heapAfterGc()
    {
        final Runtime runtime = Runtime.getRuntime();
        System.gc();
        System.gc();
        System.out.printf("%n[heap] %,d new keys so far, used heap after GC %,d KB%n", next,
            (runtime.totalMemory() - runtime.freeMemory()) / 1024);
    }
}
