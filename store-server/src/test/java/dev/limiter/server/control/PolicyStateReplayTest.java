package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Member;
import dev.limiter.protocol.policy.MembersChange;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.protocol.policy.RemoveExemption;
import dev.limiter.protocol.policy.RollbackCommand;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.protocol.policy.Tick;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * One log of every command type, replayed: the replies and the snapshot bytes it leaves must stay
 * exactly as recorded, so that replicas on either side of a change to this package agree and old
 * snapshots load.
 */
class PolicyStateReplayTest
{
    private static final long T0 = 1_796_000_000_000L;
    /** SHA-256 of every reply, check reply, snapshot and rate table of {@link #log()}, as first recorded. */
    private static final String RECORDED = "9a7f42a6dcabe0693589ccf7275a72b4fc9605a6a6a8d5e3d1da11f42e66e821";

    private static Policy orders(final long rate)
    {
        return Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
            .setRate(rate).setBurst(rate).setOwner("team-orders").setReason("launch").build();
    }

    private static PolicyCommand.Builder at(final String actor, final long millis)
    {
        return PolicyState.command(actor, millis);
    }

    private static RollbackCommand rollback(final String id, final long toVersion, final String reason)
    {
        return RollbackCommand.newBuilder().setId(id).setToVersion(toVersion).setReason(reason).build();
    }

    static List<PolicyCommand> log()
    {
        final Member n1 = Member.newBuilder().setId("n1").setAddress("h:1").build();
        final Member n2 = Member.newBuilder().setId("n2").setAddress("h:2").build();
        final Exemption.Builder exemption = Exemption.newBuilder().setId("e1").setTenant("acme")
            .setRoute("/v1/orders/{id}").setOwner("sales").setReason("load test")
            .setExpiresAt(Timestamps.fromMillis(T0 + 60_000));
        final List<PolicyCommand> log = new ArrayList<>();
        log.add(at("n1", T0).setPut(orders(10)).build());
        log.add(at("n1", T0).setBootstrap(PolicySet.newBuilder().setVersion(4)
            .addPolicies(Policy.newBuilder().setId("hot").setSelector(Selector.newBuilder().setRoute("/hot"))
                .setRate(100)
                .setScope(dev.limiter.protocol.policy.Scope.GLOBAL).setOwner("infra"))
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("infra"))).build());
        log.add(at("n2", T0 + 1).setBootstrap(PolicySet.getDefaultInstance()).build());
        log.add(at("alice", T0 + 1000).setPut(orders(10)).build());
        log.add(at("alice", T0 + 1100).setPut(orders(10)).build());
        log.add(at("alice", T0 + 1200).setPut(orders(0)).build());
        log.add(at("alice", T0 + 1300).setPut(orders(20)).setExpectedVersion(7).build());
        log.add(at("alice", T0 + 2000).setPut(orders(20)).setExpectedVersion(1).build());
        log.add(at("alice", T0 + 2100).setPut(orders(30).toBuilder()
            .setEffectiveFrom(Timestamps.fromMillis(T0 + 10_000))).build());
        log.add(at("alice", T0 + 2200).setPut(orders(5).toBuilder().setMode(Mode.SHADOW)).build());
        log.add(at("alice", T0 + 2300).setPut(Policy.newBuilder().setId("baseline").setRate(3).setOwner("infra")
            .setReason("r").setMode(Mode.SHADOW)).build());
        log.add(at("bob", T0 + 3000).setRollback(rollback("orders", 1, "too fast")).build());
        log.add(at("bob", T0 + 3100).setRollback(rollback("nope", 1, "x")).build());
        log.add(at("bob", T0 + 3200).setRollback(rollback("orders", 99, "")).build());
        log.add(at("carol", T0 + 4000).setExempt(exemption).build());
        log.add(at("carol", T0 + 4100).setExempt(exemption.clone().setId("e2")
            .setExpiresAt(Timestamps.fromMillis(T0))).build());
        log.add(at("n1", T0 + 5000).setTick(Tick.newBuilder().putBypassed("e1", 7).putBypassed("zz", 3)).build());
        log.add(at("n1", T0 + 5100).setTick(Tick.getDefaultInstance()).build());
        log.add(at("sdk", T0 + 6000).setDegraded(DegradedWindow.newBuilder().setClient("svc@host#1")
            .setStart(Timestamps.fromMillis(T0)).setEnd(Timestamps.fromMillis(T0 + 5000))
            .putDecisions("orders|OPEN|allowed", 12).putDecisions("a|OPEN|denied", 1)).build());
        log.add(at("sdk", T0 + 6100).setDegraded(DegradedWindow.newBuilder().setClient("svc@host#1")
            .setStart(Timestamps.fromMillis(T0)).setEnd(Timestamps.fromMillis(T0 + 5000))
            .putDecisions("orders|OPEN|allowed", 12).putDecisions("a|OPEN|denied", 1)).build());
        log.add(at("sdk", T0 + 6200).setDegraded(DegradedWindow.newBuilder().setClient("")).build());
        log.add(at("ops", T0 + 7000).setMembers(MembersChange.newBuilder().addBefore(n1).addAfter(n1).addAfter(n2))
            .build());
        log.add(at("ops", T0 + 7100).setMembers(MembersChange.newBuilder().addBefore(n1).setReason("empty")).build());
        log.add(at("region:eu", T0 + 8000).setRegionShares(RegionShares.newBuilder()
            .putSharePpm("orders", 730_000)).build());
        log.add(at("region:eu", T0 + 8100).setRegionShares(RegionShares.newBuilder()
            .putSharePpm("orders", 1_000_001)).build());
        log.add(at("n1", T0 + 11_000).setTick(Tick.getDefaultInstance()).build());
        log.add(at("carol", T0 + 12_000).setUnexempt(RemoveExemption.newBuilder().setId("e1")).build());
        log.add(at("carol", T0 + 12_100).setUnexempt(RemoveExemption.newBuilder()
            .setId("e1").setReason("over")).build());
        log.add(at("carol", T0 + 12_200).setUnexempt(RemoveExemption.newBuilder()
            .setId("e1").setReason("over")).build());
        log.add(at("dave", T0 + 13_000).setDelete(DeleteCommand.newBuilder().setId("orders")
            .setReason("gone")).build());
        log.add(at("dave", T0 + 13_100).setDelete(DeleteCommand.newBuilder().setId("baseline").setReason("x")).build());
        log.add(at("dave", T0 + 13_200).setDelete(DeleteCommand.newBuilder().setId("hot")).build());
        log.add(at("bob", T0 + 14_000).setRollback(rollback("orders", 2, "back")).build());
        log.add(at("eve", T0 + 15_000).build());
        log.add(at("n1", T0 + 100_000).setTick(Tick.getDefaultInstance()).build());
        return log;
    }

    private static void add(final MessageDigest digest, final ByteBuffer bytes)
    {
        digest.update(bytes.duplicate());
    }

    private static String describe(final dev.limiter.protocol.Limit limit)
    {
        return limit == null ? "-" : limit.getClass().getSimpleName() + '/' + limit.burstTokens() + '/' +
            limit.unitsPerToken() + '/' + limit.windowSeconds() + '/' + limit.fullState();
    }

    /** Every rate a replica may be asked for, as text. */
    private static String rates(final PolicyState state)
    {
        final StringBuilder text = new StringBuilder();
        for (int ordinal = 0; ordinal < 6; ordinal++)
        {
            text.append(describe(state.latestRate(ordinal))).append(';');
            for (int version = 0; version < 6; version++)
            {
                for (int shard = 0; shard < 5; shard++)
                {
                    text.append(describe(state.rateIfKnown(ordinal, version, 0, shard))).append(',');
                }
            }
        }
        return text.append(state.index().fingerprint()).toString();
    }

    @Test
    void aLogOfEveryCommandTypeGivesTheRecordedRepliesAndSnapshotBytes() throws Exception
    {
        final MessageDigest digest = MessageDigest.getInstance("SHA-256");
        final PolicyState state = new PolicyState(4, true);
        for (final PolicyCommand command : log())
        {
            add(digest, state.check(command).encode());
            add(digest, state.apply(command).encode());
            digest.update(state.snapshot().toByteArray());
            digest.update(rates(state).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        final PolicyState replica = new PolicyState(4, true);
        replica.restore(state.snapshot());
        digest.update(replica.snapshot().toByteArray());
        final String got = HexFormat.of().formatHex(digest.digest());
        assertEquals(RECORDED, got);
    }
}
