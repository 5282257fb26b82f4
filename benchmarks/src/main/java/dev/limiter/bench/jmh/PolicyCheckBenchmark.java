package dev.limiter.bench.jmh;

import com.google.protobuf.Timestamp;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.server.control.PolicyState;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * The leader's pre-check of an admin change ({@code PolicyState.check}: what apply would answer,
 * changing nothing) with an audit trail of {@code auditRecords}, and 20 policies in force.
 *
 * <pre>./limiter jmh PolicyCheckBenchmark</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class PolicyCheckBenchmark
{
    private static final long T0 = 1_796_000_000_000L;

    @Param({"1000", "100000"})
    int auditRecords;

    private PolicyState state;
    private PolicyCommand change;

    @Setup
    public void setUp()
    {
        state = new PolicyState();
        final PolicySet.Builder seed = PolicySet.newBuilder().setVersion(1)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setBurst(2).setOwner("infra"));
        for (int i = 0; i < 20; i++)
        {
            seed.addPolicies(policy(i, 100));
        }
        require(state.apply(PolicyState.command("bootstrap", T0).setBootstrap(seed).build()));
        final Timestamp at = PolicyState.command("x", T0).getAt();
        while (state.snapshot().getAuditCount() < auditRecords)
        {
            require(state.apply(PolicyState.command("sdk", T0).setDegraded(DegradedWindow.newBuilder().setClient("svc")
                .setStart(at).setEnd(at)).build()));
        }
        change = PolicyState.command("alice", T0).setPut(policy(7, 50)).build();
    }

    private static Policy policy(final int i, final long rate)
    {
        return Policy.newBuilder().setId("route-" + i).setSelector(Selector.newBuilder().setRoute("/v1/r" + i + "/{id}"))
            .setRate(rate).setBurst(rate).setOwner("team").setReason("capacity").build();
    }

    private static void require(final PolicyState.Outcome outcome)
    {
        if (outcome.status() != PolicyState.Status.OK)
        {
            throw new IllegalStateException("setup failed: " + outcome.status() + " " + outcome.error());
        }
    }

    @Benchmark
    public PolicyState.Outcome checkAChange()
    {
        return state.check(change);
    }
}
