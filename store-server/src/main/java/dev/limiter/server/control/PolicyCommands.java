package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.protocol.policy.RollbackCommand;
import dev.limiter.server.control.PolicyState.Outcome;
import dev.limiter.server.control.PolicyState.Status;

import java.util.ArrayList;
import java.util.List;

/**
 * The policy commands (BOOTSTRAP, PUT, ROLLBACK, DELETE) as the log applies them. Each reads its
 * request against the {@link PolicyCatalogue} and refuses one that is malformed or stale, with a
 * reply that says what was wrong and changes nothing; otherwise it makes the one new version the
 * request stands for (its audit action and detail with it) and hands it to the catalogue, which
 * commits it only if the whole set stays valid. Nothing here holds state: the catalogue's
 * histories, ordinals, set and rates change together, in {@link PolicyCatalogue#commit} and
 * {@link PolicyCatalogue#seed}. Time is the log's ({@link LogClock}).
 */
final class PolicyCommands
{
    private final PolicyCatalogue catalogue;
    private final LogClock clock;

    PolicyCommands(final PolicyCatalogue catalogue, final LogClock clock)
    {
        this.catalogue = catalogue;
        this.clock = clock;
    }

    /** The first set, from the policy file: ignored once there is one. */
    Outcome bootstrap(final PolicyCommand command)
    {
        if (catalogue.bootstrapped())
        {
            return new Outcome(Status.IGNORED, ChangeResult.newBuilder().setSetVersion(catalogue.setVersion()).build(),
                null);
        }
        final PolicySetIndex compiled;
        try
        {
            compiled = PolicySetIndex.compile(command.getBootstrap());
        }
        catch (final PolicyValidationException e)
        {
            return Outcome.invalid("the policy file is invalid", e.errors());
        }
        return catalogue.seed(command, compiled);
    }

    /** A new version of a policy (or its first), perhaps scheduled, perhaps a rollout to some tenants. */
    Outcome put(final PolicyCommand command)
    {
        final long at = PolicyVersions.millis(command.getAt());
        // A time already passed means now.
        Policy wanted = command.getPut().hasEffectiveFrom() &&
            PolicyVersions.millis(command.getPut().getEffectiveFrom()) <= at ?
            command.getPut().toBuilder().clearEffectiveFrom().build() : command.getPut();
        final List<PolicyVersion> existing = catalogue.versions(wanted.getId());
        final List<String> rolloutErrors = new ArrayList<>();
        if (wanted.hasRollout())
        {
            // The tenants left out stay on what was enforced before the rollout began.
            final PolicyVersion enforcedNow =
                existing == null ? null : PolicyVersions.enforced(existing, clock.millis());
            if (enforcedNow == null)
            {
                rolloutErrors.add("policy.rollout: needs a version of this policy in force to start from; " +
                    "put one without a rollout first");
                wanted = wanted.toBuilder().clearRollout().build();
            }
            else
            {
                final Policy base = enforcedNow.getPolicy().hasRollout() ?
                    enforcedNow.getPolicy().getRollout().getFallback() : enforcedNow.getPolicy();
                if (!base.getSelector().equals(wanted.getSelector()))
                {
                    rolloutErrors.add("policy.selector: must stay as in version " + base.getVersion() +
                        " during a rollout (the tenants left out stay on it); finish or roll back the rollout first");
                }
                wanted = wanted.toBuilder().setRollout(wanted.getRollout().toBuilder().setFallback(base)).build();
            }
        }
        final List<String> errors =
            new ArrayList<>(rolloutErrors.isEmpty() ? PolicySetIndex.validatePolicy(wanted) : rolloutErrors);
        if (wanted.getReason().isBlank())
        {
            errors.add("policy.reason: required (why this version exists)");
        }
        if (wanted.hasEffectiveFrom() &&
            PolicyVersions.millis(wanted.getEffectiveFrom()) - at > PolicyState.MAX_SCHEDULE_MILLIS)
        {
            errors.add("policy.effectiveFrom: at most 366 days ahead");
        }
        if (wanted.getMode() == Mode.SHADOW && catalogue.isDefault(wanted.getId()))
        {
            errors.add("policy.mode: the default policy cannot be shadowed; shadow a policy with a selector instead");
        }
        if (!errors.isEmpty())
        {
            return Outcome.invalid("policy " + wanted.getId() + " is invalid; nothing changed", errors);
        }
        final long newest = existing == null ? 0 : existing.size();
        if (command.getExpectedVersion() != 0 && command.getExpectedVersion() != newest)
        {
            return new Outcome(Status.CONFLICT, null, AdminError.newBuilder()
                .setError("policy " + wanted.getId() + " is at version " + newest + ", not " +
                    command.getExpectedVersion() +
                    ": it changed since you read it; read it again and redo the change (nothing changed)").build());
        }
        final boolean live = existing != null && PolicyVersions.inForce(existing);
        if (live && PolicyDiff.samePolicy(latest(existing).getPolicy(), wanted))
        {
            return Outcome.invalid("policy " + wanted.getId() + " version " + existing.size() +
                " already says exactly this; nothing changed", List.of());
        }
        final PolicyVersion made = PolicyVersion.newBuilder()
            .setPolicy(wanted.toBuilder().setVersion(newest + 1).build())
            .setActor(command.getActor())
            .setCreatedAt(command.getAt())
            .build();
        final String change =
            live ? PolicyDiff.diff(latest(existing).getPolicy(), wanted) : PolicyDiff.describe(wanted);
        final String detail = change +
            (wanted.hasEffectiveFrom() ? "; in force from " + Timestamps.toString(wanted.getEffectiveFrom()) : "");
        final String action = wanted.hasRollout() ? "POLICY_ROLLOUT" : live ? "POLICY_UPDATED" : "POLICY_CREATED";
        return catalogue.commit(command, made, action, wanted.getReason(),
            wanted.hasRollout() ? PolicyDiff.rolloutDetail(wanted) + "; " + detail : detail);
    }

    /** A new version that copies an earlier one, in force at once. */
    Outcome rollback(final PolicyCommand command)
    {
        final RollbackCommand rollback = command.getRollback();
        final List<PolicyVersion> versions = catalogue.versions(rollback.getId());
        if (versions == null)
        {
            return Outcome.notFound("no policy " + rollback.getId() + " (see ./limiter policy list)");
        }
        final List<String> errors = new ArrayList<>();
        if (rollback.getReason().isBlank())
        {
            errors.add("reason: required (why roll back)");
        }
        final int count = versions.size();
        if (rollback.getToVersion() < 1 || rollback.getToVersion() > count)
        {
            errors.add("toVersion: " + rollback.getToVersion() + " is not a version of " + rollback.getId() +
                " (1.." + count + ")");
        }
        else if (versions.get((int)rollback.getToVersion() - 1).getDeleted())
        {
            errors.add("toVersion: version " + rollback.getToVersion() +
                " is a deletion; roll back to a version before it");
        }
        if (!errors.isEmpty())
        {
            return Outcome.invalid("cannot roll back " + rollback.getId() + "; nothing changed", errors);
        }
        final Policy target = versions.get((int)rollback.getToVersion() - 1).getPolicy();
        // A rollback takes effect at once, whatever the copied version's schedule was.
        final Policy restored =
            target.toBuilder().setVersion(count + 1).setReason(rollback.getReason()).clearEffectiveFrom().build();
        final PolicyVersion made = PolicyVersion.newBuilder()
            .setPolicy(restored)
            .setActor(command.getActor())
            .setCreatedAt(command.getAt())
            .setRolledBackFrom(rollback.getToVersion())
            .build();
        final String detail = "to version " + rollback.getToVersion() +
            (PolicyVersions.inForce(versions) ? ": " + PolicyDiff.diff(latest(versions).getPolicy(), target) :
                " (re-creates the deleted policy)");
        return catalogue.commit(command, made, "POLICY_ROLLED_BACK", rollback.getReason(), detail);
    }

    /** A tombstone: the policy is no longer in force (its buckets still refill at the rate it had). */
    Outcome delete(final PolicyCommand command)
    {
        final DeleteCommand delete = command.getDelete();
        final List<PolicyVersion> versions = catalogue.versions(delete.getId());
        if (versions == null || !PolicyVersions.inForce(versions))
        {
            return Outcome.notFound("no policy " + delete.getId() + " in force (see ./limiter policy list)");
        }
        if (catalogue.isDefault(delete.getId()))
        {
            return Outcome.invalid("the default policy cannot be deleted; change it with put instead", List.of());
        }
        if (delete.getReason().isBlank())
        {
            return Outcome.invalid("cannot delete " + delete.getId() + "; nothing changed",
                List.of("reason: required (why delete it)"));
        }
        final PolicyVersion made = PolicyVersion.newBuilder()
            .setPolicy(latest(versions).getPolicy().toBuilder().setVersion(versions.size() + 1)
                .setReason(delete.getReason()))
            .setActor(command.getActor())
            .setCreatedAt(command.getAt())
            .setDeleted(true)
            .build();
        return catalogue.commit(command, made, "POLICY_DELETED", delete.getReason(), "no longer in force");
    }

    private static PolicyVersion latest(final List<PolicyVersion> versions)
    {
        return versions.get(versions.size() - 1);
    }
}
