package dev.limiter.bench.jmh;

import dev.limiter.client.Descriptor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * What a service pays to build a {@link Descriptor} for each request, as the servlet filter and the
 * Envoy gateway do (a request's tenant and path are new every time): normalisation, validation and
 * encoding, per descriptor; {@code -prof gc} shows the allocation. Fields rotate over
 * {@value #DISTINCT} distinct values so that nothing is folded away.
 *
 * <pre>./limiter jmh DescriptorBenchmark -prof gc</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class DescriptorBenchmark
{
    static final int DISTINCT = 1024;

    private final String[] tenants = new String[DISTINCT];
    private final String[] paths = new String[DISTINCT];
    private final String[] pathsWithQuery = new String[DISTINCT];
    private final String[] principals = new String[DISTINCT];
    private final String[] addresses = new String[DISTINCT];
    private int next;

    @Setup
    public void setUp()
    {
        for (int i = 0; i < DISTINCT; i++)
        {
            tenants[i] = "tenant-" + i;
            paths[i] = "/v1/orders/" + (100_000 + i);
            pathsWithQuery[i] = "/v1//orders/" + (100_000 + i) + "/?expand=items&page=" + i;
            principals[i] = "user-" + (7 * i);
            addresses[i] = "10.0." + (i >> 8) + "." + (i & 255);
        }
    }

    /** Tenant, route and method: what most callers set. */
    @Benchmark
    public Descriptor tenantRouteMethod()
    {
        final int i = next++ & (DISTINCT - 1);
        return Descriptor.builder().tenant(tenants[i]).route(paths[i]).method("GET").build();
    }

    /** Every field, the route with a query and empty segments to drop. */
    @Benchmark
    public Descriptor everyField()
    {
        final int i = next++ & (DISTINCT - 1);
        return Descriptor.builder().tenant(tenants[i]).principal(principals[i]).method("post").route(pathsWithQuery[i])
            .clientIp(addresses[i]).region("eu-west-1").build();
    }
}
