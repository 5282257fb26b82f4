package dev.limiter.server.control;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.Appeal;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.PolicySet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Appeals through the control state: each command carries its own time (the test's clock), as log entries do. */
class AppealBookTest
{
    private static final long T0 = 1_796_000_000_000L;
    private static final String ID = "3f9a0c1be4d27a10-2";

    private final PolicyState state = new PolicyState(1);

    @BeforeEach
    void bootstrap() throws Exception
    {
        final PolicySet.Builder set = PolicySet.newBuilder();
        JsonFormat.parser().merge("{\"version\":1,\"defaultPolicy\":{\"id\":\"default\",\"rate\":1,\"burst\":1,"
            + "\"owner\":\"test\"},\"policies\":[{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders\"},\"rate\":5,"
            + "\"burst\":5,\"owner\":\"test\"}]}", set);
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("ops",
            T0).setBootstrap(set).build()).status());
    }

    private static Appeal.Builder appeal(final String id)
    {
        return Appeal.newBuilder().setDecisionId(id).setPolicy("orders").setVersion(1).setTenant("acme")
            .setRoute("/v1/orders").setOwner("payments").setReason("batch job was allowed by contract");
    }

    private PolicyState.Outcome apply(final long atMillis, final Appeal.Builder appeal)
    {
        return state.apply(PolicyState.command("alice", atMillis).setAppeal(appeal).build());
    }

    @Test
    void anAppealIsRecordedWithTheEntrysTimeCountedForItsPolicyAndAudited()
    {
        assertEquals(PolicyState.Status.OK, apply(T0 + 1_000, appeal(ID.toUpperCase())).status());
        assertEquals(PolicyState.Status.OK, apply(T0 + 5_000, appeal("3f9a0c1be4d27a10-3")).status());

        final List<Appeal> all = state.appeals(0);
        assertEquals(2, all.size());
        assertEquals(ID, all.get(0).getDecisionId(), "kept in canonical form");
        assertEquals(PolicyState.command("x", T0 + 1_000).getAt(), all.get(0).getAt(),
            "the entry's time, not a clock's");
        assertEquals("alice", all.get(0).getActor());
        assertEquals(1, state.appeals(T0 + 2_000).size(), "--since");
        assertEquals(2, state.falseRejections("orders"));
        assertEquals(List.of("orders"), state.appealedPolicies());

        final List<AuditRecord> audit = state.audit(r -> r.getAction().equals("APPEAL_ADDED"), 10);
        assertEquals(2, audit.size());
        assertEquals("orders", audit.get(0).getPolicyId());
        assertEquals(1, audit.get(0).getVersion());
        assertEquals("payments", audit.get(0).getOwner());
        assertEquals("false rejection: decision " + ID + " tenant acme route /v1/orders", audit.get(0).getDetail());
    }

    @Test
    void aSecondAppealOfTheSameDecisionIsRefusedNamingTheFirst()
    {
        apply(T0 + 1_000, appeal(ID));
        final PolicyState.Outcome again = state.check(PolicyState.command("bob", T0 + 2_000)
            .setAppeal(appeal(ID).setOwner("other")).build());

        assertEquals(PolicyState.Status.CONFLICT, again.status(), "refused before it reaches the log");
        assertTrue(again.error().getError().contains("already appealed"), again.error().getError());
        assertTrue(again.error().getError().contains("payments"), again.error().getError());
        assertEquals(PolicyState.Status.CONFLICT, apply(T0 + 2_000, appeal(ID)).status());
        assertEquals(1, state.appeals(0).size());
        assertEquals(1, state.falseRejections("orders"));
    }

    @Test
    void badInputIsRefusedFieldByFieldAndChangesNothing()
    {
        assertInvalid(appeal(ID).setOwner(" "), "owner: required");
        assertInvalid(appeal(ID).setReason(""), "reason: required");
        assertInvalid(appeal(ID).setReason("x".repeat(AppealBook.MAX_REASON_LENGTH + 1)), "reason: at most 1024");
        assertInvalid(appeal(ID).setOwner("a\nb"), "owner: no control characters");
        assertInvalid(appeal(ID).setTenant("t".repeat(65)), "tenant: at most 64 bytes");
        assertInvalid(appeal("not-an-id"), "decisionId: 'not-an-id' is not a decision id");
        assertInvalid(appeal(ID).setPolicy(""), "give --policy ID --version N");
        assertInvalid(appeal(ID).setPolicy("nope"), "no policy 'nope' was ever created");
        assertInvalid(appeal(ID).setVersion(9), "policy 'orders' has no version 9");

        assertTrue(state.appeals(0).isEmpty());
        assertEquals(0, state.falseRejections("orders"));
        assertTrue(state.audit(r -> r.getAction().equals("APPEAL_ADDED"), 10).isEmpty());
    }

    @Test
    void appealsAndTheirCountsSurviveASnapshotAndRestore()
    {
        apply(T0 + 1_000, appeal(ID));
        final PolicyState restored = new PolicyState(1);
        restored.restore(state.snapshot());

        assertEquals(state.appeals(0), restored.appeals(0));
        assertEquals(1, restored.falseRejections("orders"));
        assertEquals(PolicyState.Status.CONFLICT, restored.apply(PolicyState.command("bob", T0 + 9_000)
            .setAppeal(appeal(ID)).build()).status(), "still a duplicate after a restart");
    }

    private void assertInvalid(final Appeal.Builder appeal, final String expected)
    {
        final PolicyState.Outcome outcome = apply(T0 + 1_000, appeal);
        assertEquals(PolicyState.Status.INVALID, outcome.status());
        final String said = outcome.error().getError() + ": " + String.join("; ", outcome.error().getErrorsList());
        assertTrue(said.contains(expected), said);
    }
}
