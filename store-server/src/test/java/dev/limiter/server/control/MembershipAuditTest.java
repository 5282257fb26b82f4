package dev.limiter.server.control;

import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.Member;
import dev.limiter.protocol.policy.MembersChange;
import dev.limiter.protocol.policy.PolicyCommand;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MembershipAuditTest
{
    private static final long T0 = 1_796_000_000_000L;
    private static final Member N1 = Member.newBuilder().setId("n1").setAddress("h:1").build();
    private static final Member N2 = Member.newBuilder().setId("n2").setAddress("h:2").build();

    private final AuditTrail audit = new AuditTrail();
    private final MembershipAudit membership = new MembershipAudit(audit, () -> 7);

    private static PolicyCommand change(final MembersChange.Builder change)
    {
        return PolicyState.command("ops", T0).setMembers(change).build();
    }

    @Test
    void shouldRecordTheMembersBeforeAndAfterWithTheCommandsTimeAndActor()
    {
        final PolicyState.Outcome outcome = membership.apply(change(MembersChange.newBuilder()
            .addBefore(N1).addAfter(N1).addAfter(N2).setReason("grow")));

        assertEquals(PolicyState.Status.OK, outcome.status());
        assertEquals(7, outcome.result().getSetVersion());
        final List<AuditRecord> records = audit.matching(r -> true, 10);
        assertEquals(1, records.size());
        final AuditRecord record = records.get(0);
        assertEquals("MEMBERS_CHANGE", record.getAction());
        assertEquals("grow", record.getReason());
        assertEquals("n1=h:1 -> n1=h:1,n2=h:2", record.getDetail());
        assertEquals("ops", record.getActor());
        assertEquals(PolicyState.command("ops", T0).getAt(), record.getAt());
    }

    @Test
    void shouldSayNoneGivenWhenTheReasonIsBlank()
    {
        membership.apply(change(MembersChange.newBuilder().addBefore(N1).addAfter(N2)));

        assertEquals("(none given)", audit.matching(r -> true, 10).get(0).getReason());
    }

    @Test
    void shouldRefuseAChangeThatLeavesNoMemberAndRecordNothing()
    {
        final PolicyState.Outcome refused = membership.apply(change(MembersChange.newBuilder().addBefore(N1)));

        assertEquals(PolicyState.Status.INVALID, refused.status());
        assertEquals("a cluster needs at least one member", refused.error().getError());
        assertTrue(audit.matching(r -> true, 10).isEmpty());
    }
}
