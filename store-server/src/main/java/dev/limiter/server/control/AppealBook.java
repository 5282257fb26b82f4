package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.Appeal;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.server.control.PolicyState.Outcome;
import dev.limiter.server.control.PolicyState.Status;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Appeals of rejected decisions as false rejections: each names its decision by id, the policy and
 * version that refused it, who answers for the appeal and why. Applied only from the control log
 * (time and actor from the entry), so every member holds the same appeals and counts the same false
 * rejections per policy. A decision is appealed once; an appeal that names no known policy version,
 * or lacks an owner or a reason, changes nothing and says why. Each appeal is written to the
 * {@link AuditTrail}. It owns the APPEAL command and writes its reply; changes are guarded by
 * {@link PolicyState}, counts are read from any thread.
 */
final class AppealBook
{
    /** Appeals kept; the oldest are dropped (their counts stay). */
    static final int MAX_APPEALS = 100_000;
    static final int MAX_OWNER_LENGTH = 128;
    static final int MAX_REASON_LENGTH = 1024;
    static final int MAX_TENANT_BYTES = 64;
    static final int MAX_ROUTE_BYTES = 512;

    private final AuditTrail audit;
    private final LongSupplier setVersion;
    private final Function<String, PolicyHistory> histories;
    private final ArrayDeque<Appeal> appeals = new ArrayDeque<>();
    private final Map<String, Appeal> byDecision = new HashMap<>();
    /** Appeals applied, by policy id: all of them, also those no longer kept. */
    private final Map<String, Long> falseRejections = new ConcurrentHashMap<>();

    /**
     * @param histories every version of a policy by id, null for an id never used (an appeal names a version of it)
     */
    AppealBook(final AuditTrail audit, final LongSupplier setVersion, final Function<String, PolicyHistory> histories)
    {
        this.audit = audit;
        this.setVersion = setVersion;
        this.histories = histories;
    }

    /** APPEAL: records the appeal, or says why not. */
    Outcome appeal(final PolicyCommand command)
    {
        final Appeal wanted = command.getAppeal();
        final List<String> errors = problems(wanted);
        if (!errors.isEmpty())
        {
            return Outcome.invalid("appeal of decision '" + wanted.getDecisionId() + "' is invalid; nothing changed",
                errors);
        }
        final String id = DecisionIds.canonical(wanted.getDecisionId());
        final Appeal earlier = byDecision.get(id);
        if (earlier != null)
        {
            return new Outcome(Status.CONFLICT, null, AdminError.newBuilder()
                .setError("decision " + id + " was already appealed at " + Timestamps.toString(earlier.getAt())
                    + " by " + earlier.getOwner() + " (" + earlier.getReason()
                    + "): one appeal per decision; nothing changed")
                .build());
        }
        final Appeal made = wanted.toBuilder()
            .setDecisionId(id)
            .setOwner(wanted.getOwner().strip())
            .setReason(wanted.getReason().strip())
            .setAt(command.getAt())
            .setActor(command.getActor())
            .build();
        appeals.addLast(made);
        byDecision.put(id, made);
        while (appeals.size() > MAX_APPEALS)
        {
            byDecision.remove(appeals.removeFirst().getDecisionId());
        }
        falseRejections.merge(made.getPolicy(), 1L, Long::sum);
        audit.record(command, "APPEAL_ADDED", made.getPolicy(), made.getVersion(), made.getOwner(), made.getReason(),
            "false rejection: decision " + id + (made.getTenant().isEmpty() ? "" : " tenant " + made.getTenant()) +
                (made.getRoute().isEmpty() ? "" : " route " + made.getRoute()));
        return Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion.getAsLong()).build());
    }

    /** What is wrong with an appeal as sent (empty: nothing). */
    private List<String> problems(final Appeal appeal)
    {
        final List<String> errors = new ArrayList<>();
        final String idProblem = DecisionIds.problem(appeal.getDecisionId());
        if (idProblem != null)
        {
            errors.add("decisionId: " + idProblem + " (as the Limiter-Decision-Id header gave it)");
        }
        text(errors, "owner", appeal.getOwner(), MAX_OWNER_LENGTH, "who answers for the appeal");
        text(errors, "reason", appeal.getReason(), MAX_REASON_LENGTH, "why the rejection was false");
        if (appeal.getTenant().getBytes(StandardCharsets.UTF_8).length > MAX_TENANT_BYTES)
        {
            errors.add("tenant: at most " + MAX_TENANT_BYTES + " bytes");
        }
        if (appeal.getRoute().getBytes(StandardCharsets.UTF_8).length > MAX_ROUTE_BYTES)
        {
            errors.add("route: at most " + MAX_ROUTE_BYTES + " bytes");
        }
        if (appeal.getPolicy().isBlank())
        {
            errors.add("policy: required (filled from the decision a node sampled; for one no node sampled, give " +
                "--policy ID --version N)");
            return errors;
        }
        final PolicyHistory history = histories.apply(appeal.getPolicy());
        if (history == null)
        {
            errors.add("policy: no policy '" + appeal.getPolicy() + "' was ever created (see ./limiter policy list)");
        }
        else if (history.getVersionsList().stream().map(PolicyVersion::getPolicy)
            .noneMatch(p -> p.getVersion() == appeal.getVersion()))
        {
            errors.add("version: policy '" + appeal.getPolicy() + "' has no version " + appeal.getVersion()
                + " (versions 1 to " + history.getVersionsCount() + ")");
        }
        return errors;
    }

    private static void text(final List<String> errors, final String field, final String value, final int max,
        final String what)
    {
        if (value.isBlank())
        {
            errors.add(field + ": required (" + what + ")");
        }
        else if (value.strip().length() > max)
        {
            errors.add(field + ": at most " + max + " characters, was " + value.strip().length());
        }
        else if (value.chars().anyMatch(Character::isISOControl))
        {
            errors.add(field + ": no control characters (line breaks, tabs)");
        }
    }

    /** Appeals made at or after {@code sinceMillis}, oldest first. */
    List<Appeal> since(final long sinceMillis)
    {
        final List<Appeal> found = new ArrayList<>();
        for (final Appeal appeal : appeals)
        {
            if (PolicyVersions.millis(appeal.getAt()) >= sinceMillis)
            {
                found.add(appeal);
            }
        }
        return found;
    }

    /** Appeals applied against {@code policy} (any thread). */
    long falseRejections(final String policy)
    {
        return falseRejections.getOrDefault(policy, 0L);
    }

    /** The policies any appeal was applied against. */
    List<String> appealedPolicies()
    {
        return List.copyOf(new TreeMap<>(falseRejections).keySet());
    }

    void writeTo(final PolicyStateSnapshot.Builder snapshot)
    {
        snapshot.addAllAppeals(appeals);
        snapshot.putAllFalseRejections(new TreeMap<>(falseRejections));
    }

    void restoreFrom(final PolicyStateSnapshot snapshot)
    {
        appeals.clear();
        byDecision.clear();
        falseRejections.clear();
        for (final Appeal appeal : snapshot.getAppealsList())
        {
            appeals.addLast(appeal);
            byDecision.put(appeal.getDecisionId(), appeal);
        }
        falseRejections.putAll(snapshot.getFalseRejectionsMap());
    }
}
