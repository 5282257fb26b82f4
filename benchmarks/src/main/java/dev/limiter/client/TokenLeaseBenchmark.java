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
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A decision from an SDK token lease ({@code TokenBlocks.tryLocal}): the caller's reused
 * descriptor finds its key's block and takes a token from it, as {@code acquireBlocking} does
 * before any round trip. Blocks are granted at once by a stand-in for the cluster (a renewal
 * costs what it costs in the background: here nothing), 100 tenants, 20 policies. And
 * {@link #findNoLease}: what every async acquire pays first when the set leases some route but
 * not the caller's. In the client's package to reach the package-private leases.
 *
 * <pre>./limiter jmh TokenLeaseBenchmark -prof gc</pre>
 */
@State(org.openjdk.jmh.annotations.Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class TokenLeaseBenchmark
{
    private static final int TENANTS = 100;

    private TokenBlocks leases;
    private Descriptor[] calls;
    private int next;

    @Setup
    public void setUp()
    {
        final PolicySet.Builder set = PolicySet.newBuilder().setVersion(3)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setOwner("infra"));
        for (int i = 0; i < 19; i++)
        {
            set.addPolicies(Policy.newBuilder().setId("route-" + i).setSelector(Selector.newBuilder().setRoute("/v1/r" + i + "/{id}"))
                .setRate(100).setOwner("team"));
        }
        set.addPolicies(Policy.newBuilder().setId("hot").setSelector(Selector.newBuilder().setRoute("/v1/hot/{id}"))
            .setRate(1_000_000_000L).setBurst(1_000_000_000L).setScope(Scope.TENANT).setOwner("team")
            .setTokenLease(TokenLease.newBuilder().setMaxSharePercent(50)
                .setMaxAge(com.google.protobuf.Duration.newBuilder().setSeconds(10))));
        final PolicyCache cache = new PolicyCache(Duration.ofHours(1), System::nanoTime);
        cache.received(3, set.build().toByteArray());
        leases = new TokenBlocks(cache, System::nanoTime, (descriptor, block) -> CompletableFuture.completedFuture(
            new Decision(true, ReasonCode.ALLOWED, 1, 1_000_000_000L, 0, 0, "hot", 1, 1)));
        calls = new Descriptor[TENANTS];
        for (int i = 0; i < TENANTS; i++)
        {
            calls[i] = Descriptor.of("tenant-" + i, "/v1/hot/" + i);
        }
        // Watch each key's demand for a window, then take its first block (as the first calls would).
        final long until = System.nanoTime() + 60_000_000L;
        while (System.nanoTime() < until)
        {
            for (final Descriptor call : calls)
            {
                if (leases.tryLocal(call, 1) == null)
                {
                    final int ask = leases.toAsk(call, 1);
                    leases.granted(call, 1, ask, System.nanoTime(), new Decision(true, ReasonCode.ALLOWED, 1, 1_000_000_000L, 0, 0, "hot", 1, 1));
                }
            }
        }
    }

    @Benchmark
    public Decision decideFromLease()
    {
        final int i = next;
        next = i + 1 == TENANTS ? 0 : i + 1;
        final Decision d = leases.tryLocal(calls[i], 1);
        if (d == null)
        {
            // The block ran out before its renewal landed: take one now, as a caller's round trip would.
            final int ask = leases.toAsk(calls[i], 1);
            leases.granted(calls[i], 1, ask, System.nanoTime(), new Decision(true, ReasonCode.ALLOWED, 1, 1_000_000_000L, 0, 0, "hot", 1, 1));
        }
        return d;
    }

    /**
     * 100,000 descriptors on routes a set leases nothing on (one route of it is leased), each seen
     * once, as after a service's first calls.
     */
    @State(org.openjdk.jmh.annotations.Scope.Thread)
    public static class NotLeased
    {
        static final int DESCRIPTORS = 100_000;
        TokenBlocks leases;
        Descriptor[] calls;
        int next;

        @Setup
        public void setUp()
        {
            final PolicySet set = PolicySet.newBuilder().setVersion(3)
                .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setOwner("infra"))
                .addPolicies(Policy.newBuilder().setId("leased").setSelector(Selector.newBuilder().setRoute("/v1/hot/{id}"))
                    .setRate(1_000_000).setScope(Scope.TENANT).setOwner("team").setTokenLease(TokenLease.newBuilder().setMaxSharePercent(10)))
                .build();
            final PolicyCache cache = new PolicyCache(Duration.ofHours(1), System::nanoTime);
            cache.received(3, set.toByteArray());
            leases = new TokenBlocks(cache, System::nanoTime, (descriptor, block) -> new CompletableFuture<>());
            calls = new Descriptor[DESCRIPTORS];
            for (int i = 0; i < DESCRIPTORS; i++)
            {
                calls[i] = Descriptor.builder().tenant("tenant-" + i).route("/bench/" + i).method("GET").build();
                leases.tryLocal(calls[i], 1);
                if (i < FRESH)
                {
                    tenants[i] = "tenant-" + i;
                    routes[i] = "/bench/" + i;
                }
            }
        }

        static final int FRESH = 1024;
        final String[] tenants = new String[FRESH];
        final String[] routes = new String[FRESH];
        int nextFresh;
    }

    /**
     * "No lease here" for a descriptor built for this call, as the servlet filter and the Envoy
     * gateway build one per request: the build (see {@code DescriptorBenchmark}) and the policy
     * match that finds the route leases nothing, which a reused descriptor remembers.
     */
    @Benchmark
    public Decision findNoLeaseForANewDescriptor(final NotLeased state)
    {
        final int i = state.nextFresh++ & (NotLeased.FRESH - 1);
        return state.leases.tryLocal(Descriptor.builder().tenant(state.tenants[i]).route(state.routes[i]).method("GET").build(), 1);
    }

    /** "No lease here" for a descriptor met cold in the cache, as with many descriptors between calls. */
    @Benchmark
    public Decision findNoLease(final NotLeased state)
    {
        // A stride through the array, so that consecutive calls share no cache line.
        final int i = state.next;
        state.next = i + 7919 >= NotLeased.DESCRIPTORS ? i + 7919 - NotLeased.DESCRIPTORS : i + 7919;
        return state.leases.tryLocal(state.calls[i], 1);
    }
}
