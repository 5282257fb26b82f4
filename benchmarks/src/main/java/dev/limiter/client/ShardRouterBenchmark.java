package dev.limiter.client;

import dev.limiter.protocol.ShardMap;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;
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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What shard-aware routing adds to every SDK call when the cluster runs several Raft groups
 * ({@code ShardRouter.leaderFor}: match the call against the policy set in force, build the
 * bucket key's place, look up the shard's leader), for a tenant-scoped, a GLOBAL and a CLIENT_IP
 * policy, over 10,000 tenants and 20 policies, 12 shards in 3 groups. The descriptors are used
 * again, so after the first pass each keeps its shard and the match is skipped; a new descriptor
 * pays it once. In the client's package to reach the package-private router.
 *
 * <pre>./limiter jmh ShardRouterBenchmark -prof gc</pre>
 */
@State(org.openjdk.jmh.annotations.Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ShardRouterBenchmark
{
    private static final int CALLS = 10_000;

    private ShardRouter router;
    private Descriptor[] tenantCalls;
    private Descriptor[] globalCalls;
    private Descriptor[] ipCalls;
    private int next;

    @Setup
    public void setUp()
    {
        final PolicySet.Builder set = PolicySet.newBuilder().setVersion(7)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setOwner("infra"));
        for (int i = 0; i < 17; i++)
        {
            set.addPolicies(Policy.newBuilder().setId("route-" + i).setSelector(Selector.newBuilder().setRoute("/v1/r" + i + "/{id}"))
                .setRate(100).setOwner("team"));
        }
        set.addPolicies(Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
            .setRate(100).setOwner("team"));
        set.addPolicies(Policy.newBuilder().setId("search").setSelector(Selector.newBuilder().setRoute("/v1/search"))
            .setScope(Scope.GLOBAL).setRate(1000).setOwner("team"));
        set.addPolicies(Policy.newBuilder().setId("login").setSelector(Selector.newBuilder().setRoute("/login"))
            .setScope(Scope.CLIENT_IP).setRate(5).setOwner("team"));
        final PolicySet policies = set.build();
        final PolicyCache cache = new PolicyCache(Duration.ofDays(1), System::nanoTime);
        cache.received(7, policies.toByteArray());
        router = new ShardRouter(cache, lane -> false); // no circuit open, as in steady state
        final Map<String, Integer> ordinals = new LinkedHashMap<>();
        ordinals.put("baseline", 0);
        policies.getPoliciesList().forEach(p -> ordinals.put(p.getId(), ordinals.size()));
        final int[] groupOfShard = new int[12];
        for (int s = 0; s < groupOfShard.length; s++)
        {
            groupOfShard[s] = s % 3;
        }
        router.mapReceived(new ShardMap(groupOfShard, new String[] {"10.0.0.1:7400", "10.0.0.2:7400", "10.0.0.3:7400"}, 7, ordinals));
        if (!router.routes())
        {
            throw new IllegalStateException("the router does not route: the benchmark would measure nothing");
        }
        tenantCalls = new Descriptor[CALLS];
        globalCalls = new Descriptor[CALLS];
        ipCalls = new Descriptor[CALLS];
        for (int i = 0; i < CALLS; i++)
        {
            tenantCalls[i] = Descriptor.of("tenant-" + i, "/v1/orders/" + i);
            globalCalls[i] = Descriptor.of("tenant-" + i, "/v1/search");
            ipCalls[i] = Descriptor.builder().tenant("tenant-" + i).route("/login")
                .clientIp("10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255)).build();
        }
    }

    private int nextIndex()
    {
        final int i = next;
        next = i + 1 == CALLS ? 0 : i + 1;
        return i;
    }

    @Benchmark
    public String tenantScoped()
    {
        return router.leaderFor(tenantCalls[nextIndex()]);
    }

    @Benchmark
    public String global()
    {
        return router.leaderFor(globalCalls[nextIndex()]);
    }

    @Benchmark
    public String perClientIp()
    {
        return router.leaderFor(ipCalls[nextIndex()]);
    }
}
