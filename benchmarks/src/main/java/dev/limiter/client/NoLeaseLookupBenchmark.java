package dev.limiter.client;

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
 * What every async acquire pays first when the policy set leases some route but not the caller's:
 * {@code TokenLeases.tryLocal} finding "no lease here" for a descriptor, over 100,000 descriptors
 * (as a service with many tenants, or the load generator, has), so that each call meets its
 * descriptor cold in the cache as it would between real calls. In the client's package to reach
 * the package-private leases.
 *
 * <pre>./limiter jmh NoLeaseLookupBenchmark -prof gc</pre>
 */
@State(org.openjdk.jmh.annotations.Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class NoLeaseLookupBenchmark
{
    private static final int DESCRIPTORS = 100_000;

    private TokenLeases leases;
    private Descriptor[] calls;
    private int next;

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
        leases = new TokenLeases(cache, System::nanoTime, (descriptor, block) -> new CompletableFuture<>());
        calls = new Descriptor[DESCRIPTORS];
        for (int i = 0; i < DESCRIPTORS; i++)
        {
            calls[i] = Descriptor.builder().tenant("tenant-" + i).route("/bench/" + i).method("GET").build();
            leases.tryLocal(calls[i], 1); // each descriptor seen once, as after a service's first calls
        }
    }

    @Benchmark
    public Decision findNoLease()
    {
        // A stride through the array, so that consecutive calls share no cache line.
        final int i = next;
        next = i + 7919 >= DESCRIPTORS ? i + 7919 - DESCRIPTORS : i + 7919;
        return leases.tryLocal(calls[i], 1);
    }
}
