package dev.limiter.server.control;

import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.Member;
import dev.limiter.protocol.policy.MembersChange;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.server.control.PolicyState.Outcome;

import java.util.List;
import java.util.StringJoiner;
import java.util.function.LongSupplier;

/**
 * Membership changes as the audit trail records them (MEMBERS commands). An operator's change is
 * recorded before Raft makes it: a leader that removes itself cannot record anything afterwards.
 * The record is all there is; the members themselves are Raft's.
 */
final class MembershipAudit
{
    private final AuditTrail audit;
    private final LongSupplier setVersion;

    /** @param setVersion the policy set's version, which every reply names */
    MembershipAudit(final AuditTrail audit, final LongSupplier setVersion)
    {
        this.audit = audit;
        this.setVersion = setVersion;
    }

    /** MEMBERS: one MEMBERS_CHANGE record, members before and after; refused when none would be left. */
    Outcome apply(final PolicyCommand command)
    {
        final MembersChange change = command.getMembers();
        if (change.getAfterCount() == 0)
        {
            return Outcome.invalid("a cluster needs at least one member", List.of());
        }
        final String reason = change.getReason().isBlank() ? "(none given)" : change.getReason();
        audit.record(command, "MEMBERS_CHANGE", "", 0, "", reason,
            memberList(change.getBeforeList()) + " -> " + memberList(change.getAfterList()));
        return Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion.getAsLong()).build());
    }

    private static String memberList(final List<Member> members)
    {
        final StringJoiner text = new StringJoiner(",");
        members.forEach(m -> text.add(m.getId() + "=" + m.getAddress()));
        return text.toString();
    }
}
