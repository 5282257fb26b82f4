package dev.limiter.server.control;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Selector;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Dry runs of changes (what the leader does before a change goes to the log) race the data plane
 * (reading the policy set in force and the rates of what it decides under) and a replica's apply
 * thread (applying committed changes and replaying decisions under the versions they name). No
 * reader may ever see a version that was not applied, and replay never misses a version.
 */
class PolicyCheckRaceTest
{
    private static final long T0 = 1_796_000_000_000L;

    private static Policy orders(final long rate)
    {
        return Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
            .setRate(rate).setBurst(rate).setOwner("team-orders").setReason("tuning").build();
    }

    @Test
    void checksNeverShowAnUncommittedVersionToDecisionsOrReplicas() throws Exception
    {
        final PolicyState state = new PolicyState();
        final PolicySet.Builder file = PolicySet.newBuilder();
        JsonFormat.parser().merge("{\"version\":1,\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"infra\"}}", file);
        state.apply(PolicyState.command("n1", T0).setBootstrap(file).build());
        state.apply(PolicyState.command("alice", T0).setPut(orders(10)).build());

        // The newest version of "orders" any reader may see: raised just before the apply that makes it.
        final AtomicLong newestApplied = new AtomicLong(1);
        final AtomicBoolean stop = new AtomicBoolean();
        final List<String> problems = java.util.Collections.synchronizedList(new ArrayList<>());
        final AtomicLong checks = new AtomicLong();
        final AtomicLong reads = new AtomicLong();

        final Thread checker = new Thread(() ->
        {
            long i = 0;
            while (!stop.get())
            {
                // Valid changes (they would make a new version), invalid ones, and exemptions.
                final long at = T0 + 1000 + i;
                final PolicyState.Status valid = state.check(PolicyState.command("bob", at).setPut(orders(11 + i % 50)).build()).status();
                final PolicyState.Status invalid = state.check(PolicyState.command("bob", at).setPut(orders(0)).build()).status();
                state.check(PolicyState.command("bob", at).setExempt(Exemption.newBuilder().setId("x" + i % 7).setTenant("acme")
                    .setOwner("sales").setReason("test").setExpiresAt(com.google.protobuf.util.Timestamps.fromMillis(at + 60_000))).build());
                if (valid != PolicyState.Status.OK || invalid != PolicyState.Status.INVALID)
                {
                    problems.add("check answered " + valid + " / " + invalid);
                }
                checks.incrementAndGet();
                i++;
            }
        }, "checker");
        final Thread dataPlane = new Thread(() ->
        {
            while (!stop.get())
            {
                final PolicySetIndex index = state.index();
                for (final CompiledPolicy policy : index.policies())
                {
                    if (policy.id().equals("orders") && policy.version() > newestApplied.get())
                    {
                        problems.add("the data plane saw orders version " + policy.version() + ", newest applied " + newestApplied.get());
                    }
                }
                if (!state.activeExemptions().isEmpty())
                {
                    problems.add("the data plane saw an exemption that was only checked");
                }
                reads.incrementAndGet();
            }
        }, "data-plane");
        final Thread replica = new Thread(() ->
        {
            int ordinal = -1;
            for (long version = 2; version <= 40 && !stop.get(); version++)
            {
                newestApplied.set(version);
                final PolicyState.Outcome applied = state.apply(PolicyState.command("carol", T0 + version).setPut(orders(100 + version)).build());
                if (applied.status() != PolicyState.Status.OK)
                {
                    problems.add("apply of version " + version + " answered " + applied.status());
                }
                ordinal = ordinal >= 0 ? ordinal : state.ordinalsOf("orders")[0];
                for (int replay = 0; replay < 200; replay++)
                {
                    try
                    {
                        // A replica replays decisions made under every version applied so far.
                        state.rate(ordinal, 1 + replay % version, 0);
                    }
                    catch (final IllegalStateException e)
                    {
                        problems.add("replay failed: " + e.getMessage());
                    }
                }
                try
                {
                    // the pace of the racing writer
                    Thread.sleep(5);
                }
                catch (final InterruptedException e)
                {
                    return;
                }
            }
        }, "replica-apply");
        checker.start();
        dataPlane.start();
        replica.start();
        replica.join(TimeUnit.SECONDS.toMillis(30));
        stop.set(true);
        checker.join(10_000);
        dataPlane.join(10_000);
        assertTrue(problems.isEmpty(), problems.size() + " problems, first: " + problems.stream().limit(5).toList());
        assertTrue(checks.get() > 10 && reads.get() > 1000, checks + " checks, " + reads + " reads: the race did not run");
        assertEquals(40, state.history("orders").getVersionsCount());
    }
}
