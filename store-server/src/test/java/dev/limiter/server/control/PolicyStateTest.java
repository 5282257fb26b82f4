package dev.limiter.server.control;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.RollbackCommand;
import dev.limiter.protocol.policy.Selector;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PolicyStateTest
{
    private static final long T0 = 1_796_000_000_000L; // wall-clock millis, 2026-11

    private final PolicyState state = new PolicyState();

    private static Policy orders(final long rate)
    {
        return Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
            .setRate(rate).setBurst(rate).setOwner("team-orders").setReason("launch").build();
    }

    private static PolicyCommand put(final Policy policy, final long at)
    {
        return PolicyState.command("alice", at).setPut(policy).build();
    }

    @BeforeEach
    void seed() throws Exception
    {
        final PolicySet.Builder file = PolicySet.newBuilder();
        JsonFormat.parser().merge("{\"version\":4,\"policies\":[{\"id\":\"hot\",\"selector\":{\"route\":\"/hot\"},\"rate\":100," +
            "\"scope\":\"GLOBAL\",\"owner\":\"infra\"}],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"infra\"}}", file);
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("n1", T0).setBootstrap(file).build()).status());
    }

    @Test
    void aSeedIsAppliedOnceAndLaterSeedsAreIgnored()
    {
        assertTrue(state.bootstrapped());
        assertEquals(4, state.setVersion());
        assertEquals(2, state.index().size());
        final PolicyState.Outcome again = state.apply(PolicyState.command("n2", T0 + 1).setBootstrap(PolicySet.getDefaultInstance()).build());
        assertEquals(PolicyState.Status.IGNORED, again.status());
        assertEquals(2, state.index().size(), "the second seed changed nothing");
    }

    @Test
    void everyChangeMakesANewImmutableVersionAndKeepsTheOrdinal()
    {
        final PolicyState.Outcome created = state.apply(put(orders(10), T0 + 1000));
        assertEquals(PolicyState.Status.OK, created.status());
        assertEquals(1, created.result().getVersion().getPolicy().getVersion());
        assertEquals(5, created.result().getSetVersion());
        final int ordinal = state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().ordinal();

        final PolicyState.Outcome updated = state.apply(put(orders(20), T0 + 2000));
        assertEquals(2, updated.result().getVersion().getPolicy().getVersion());
        assertEquals(20, state.current("orders").getRate());
        assertEquals(ordinal, state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().ordinal());
        assertEquals(2, state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().version());
        // The old version stays readable for decisions made under it.
        assertEquals(10, state.rate(ordinal, 1).burstTokens());
        assertEquals(20, state.rate(ordinal, 2).burstTokens());
        assertThrows(IllegalStateException.class, () -> state.rate(ordinal, 3));
        assertEquals(List.of(10L, 20L), state.history("orders").getVersionsList().stream().map(v -> v.getPolicy().getRate()).toList());
        assertEquals("alice", state.history("orders").getVersions(1).getActor());
    }

    @Test
    void anInvalidChangeChangesNothingAndNamesEveryBadField()
    {
        final long before = state.setVersion();
        final PolicyState.Outcome invalid = state.apply(put(orders(10).toBuilder().setRate(0).setOwner("").setReason("").build(), T0));
        assertEquals(PolicyState.Status.INVALID, invalid.status());
        final List<String> errors = invalid.error().getErrorsList();
        assertTrue(errors.stream().anyMatch(e -> e.startsWith("policy.rate:")), errors.toString());
        assertTrue(errors.stream().anyMatch(e -> e.startsWith("policy.owner:")), errors.toString());
        assertTrue(errors.stream().anyMatch(e -> e.startsWith("policy.reason:")), errors.toString());
        assertEquals(before, state.setVersion());
        assertNull(state.history("orders"));
        assertEquals(1, state.audit(r -> true, 100).size(), "only the seed is audited");
    }

    @Test
    void aChangeConflictingWithAnotherPolicysSelectorIsRefused()
    {
        state.apply(put(orders(10), T0));
        final PolicyState.Outcome conflict = state.apply(put(orders(10).toBuilder().setId("orders-copy").build(), T0));
        assertEquals(PolicyState.Status.INVALID, conflict.status());
        assertTrue(conflict.error().getErrorsList().stream().anyMatch(e -> e.contains("conflicts with policy 'orders'")),
            conflict.error().toString());
        assertNull(state.current("orders-copy"));
    }

    @Test
    void rollbackMakesANewVersionEqualToTheChosenOneAndIsAudited()
    {
        state.apply(put(orders(10), T0));
        state.apply(put(orders(1), T0 + 1000));
        final PolicyState.Outcome rolledBack = state.apply(PolicyState.command("bob", T0 + 2000)
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(1).setReason("v2 starved checkout")).build());
        assertEquals(PolicyState.Status.OK, rolledBack.status());
        final Policy current = state.current("orders");
        assertEquals(3, current.getVersion());
        assertEquals(10, current.getRate());
        assertEquals(1, state.history("orders").getVersions(2).getRolledBackFrom());
        final AuditRecord last = state.audit(r -> r.getPolicyId().equals("orders"), 10).get(2);
        assertEquals("POLICY_ROLLED_BACK", last.getAction());
        assertEquals("bob", last.getActor());
        assertEquals("v2 starved checkout", last.getReason());
        assertTrue(last.getDetail().contains("rate 1 -> 10"), last.getDetail());

        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("bob", T0)
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(9).setReason("x")).build()).status());
        assertEquals(PolicyState.Status.NOT_FOUND, state.apply(PolicyState.command("bob", T0)
            .setRollback(RollbackCommand.newBuilder().setId("nope").setToVersion(1).setReason("x")).build()).status());
        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("bob", T0)
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(1)).build()).status(), "a reason is required");
    }

    @Test
    void deletionIsATombstoneVersionAndTheDefaultCannotBeDeleted()
    {
        state.apply(put(orders(10), T0));
        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("bob", T0)
            .setDelete(DeleteCommand.newBuilder().setId("orders")).build()).status(), "a reason is required");
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("bob", T0)
            .setDelete(DeleteCommand.newBuilder().setId("orders").setReason("route retired")).build()).status());
        assertNull(state.current("orders"));
        assertTrue(state.history("orders").getVersions(1).getDeleted());
        assertFalse(state.index().policies().stream().anyMatch(p -> p.id().equals("orders")));
        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("bob", T0)
            .setDelete(DeleteCommand.newBuilder().setId("baseline").setReason("x")).build()).status());
        // Roll back past the deletion: the policy is in force again, as version 3, with its old ordinal.
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("bob", T0)
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(1).setReason("needed after all")).build()).status());
        assertEquals(3, state.current("orders").getVersion());
    }

    @Test
    void checkAnswersLikeApplyButChangesNothing()
    {
        final PolicyState.Outcome checked = state.check(put(orders(10), T0));
        assertEquals(PolicyState.Status.OK, checked.status());
        assertNull(state.current("orders"));
        assertEquals(1, state.audit(r -> true, 10).size());
        assertEquals(PolicyState.Status.OK, state.apply(put(orders(10), T0)).status());
        assertEquals(1, state.current("orders").getVersion());
    }

    @Test
    void aSnapshotRestoresTheSameStateOnAnotherReplica()
    {
        state.apply(put(orders(10), T0));
        state.apply(put(orders(30), T0 + 5));
        final PolicyState replica = new PolicyState();
        replica.restore(state.snapshot());
        assertEquals(state.snapshot(), replica.snapshot());
        assertEquals(state.index().fingerprint(), replica.index().fingerprint());
        assertEquals(state.setVersion(), replica.setVersion());
        // Both continue identically.
        state.apply(put(orders(40), T0 + 9));
        replica.apply(put(orders(40), T0 + 9));
        assertEquals(state.snapshot(), replica.snapshot());
        assertNotNull(replica.current("orders"));
        replica.reset();
        assertFalse(replica.bootstrapped());
    }

    @Test
    void auditIsQueryableByPolicyAndKeepsTheNewestWhenLimited()
    {
        for (int rate = 1; rate <= 5; rate++)
        {
            state.apply(put(orders(rate), T0 + rate));
        }
        final List<AuditRecord> orders = state.audit(r -> r.getPolicyId().equals("orders"), 2);
        assertEquals(2, orders.size());
        assertEquals(5, orders.get(1).getVersion());
        assertEquals("POLICY_UPDATED", orders.get(1).getAction());
        assertTrue(orders.get(0).getSequence() < orders.get(1).getSequence());
    }
}
