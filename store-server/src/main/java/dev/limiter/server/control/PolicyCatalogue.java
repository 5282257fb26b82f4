package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.OrdinalSlot;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.protocol.policy.RollbackCommand;
import dev.limiter.server.control.PolicyState.Outcome;
import dev.limiter.server.control.PolicyState.Status;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * The policy catalogue: every version of every policy, the ordinals they hold, the set in force
 * and its version. It owns the BOOTSTRAP, PUT, ROLLBACK and DELETE commands and writes their
 * replies, brings scheduled versions into force as the log's clock passes them, and publishes the
 * rates of every version to {@link VersionRates} after each change. Histories, ordinals, the set
 * and the rates change together in every command (a put is checked by compiling the set it would
 * make, with the ordinals it would assign, now and once every scheduled version has taken effect),
 * so they live in one class. Not thread-safe: {@link PolicyState} guards it; {@link #index()} and
 * {@link #bootstrapped()} may be read from any thread.
 */
final class PolicyCatalogue
{
    private static final class History
    {
        final String id;
        final List<PolicyVersion> versions = new ArrayList<>();
        /** Every limit of each version (its own first, then its extra limits). */
        final List<Limit[]> rates = new ArrayList<>();
        /** Whether each version's budget is split into per-shard shares ({@link CompiledPolicy#splitsAcrossShards}). */
        final List<Boolean> split = new ArrayList<>();
        int enforceOrdinal = -1;
        int shadowOrdinal = -1;

        /**
         * Whether this node decides against a region's share of regional policies (their rates then
         * count thousandths of a token).
         */
        private final boolean regions;

        History(final String id, final boolean regions)
        {
            this.id = id;
            this.regions = regions;
        }

        PolicyVersion latest()
        {
            return versions.get(versions.size() - 1);
        }

        boolean inForce()
        {
            return PolicyVersions.enforced(versions, Long.MAX_VALUE - 1) != null ||
                PolicyVersions.shadowed(versions, Long.MAX_VALUE - 1) != null;
        }

        void add(final PolicyVersion version)
        {
            versions.add(version);
            // A tombstone keeps the rate of what it deleted: buckets of that version still refill.
            final Policy policy = version.getPolicy();
            rates.add(version.getDeleted() && !rates.isEmpty() ? rates.get(rates.size() - 1) : PolicySetIndex.limitsOf(
                regions && policy.hasRegional() ? PolicySetIndex.scaledForRegions(policy) : policy));
            split.add(version.getDeleted() && !split.isEmpty() ? split.get(split.size() - 1) :
                CompiledPolicy.splitsAcrossShards(policy));
        }
    }

    /** Whose ordinal is whose: ordinal i belongs to one policy id in one mode. */
    private record Slot(History history, boolean shadow)
    {
    }

    private final List<Slot> byOrdinal = new ArrayList<>();
    /** In creation order (the order the set is built in, the same on every replica). */
    private final Map<String, History> byId = new LinkedHashMap<>();
    /** Ordinals a candidate set would give ids that have none yet (while compiling it). */
    private final Map<String, Integer> provisional = new HashMap<>();
    private final AuditTrail audit;
    private final LogClock clock;
    private final VersionRates versionRates;
    /** Whether this node decides against a region's share of regional policies. */
    private final boolean regions;
    private String defaultId = "";
    private long setVersion;
    private volatile boolean bootstrapped;
    private volatile PolicySetIndex index = PolicySetIndex.compile(PolicySet.getDefaultInstance());

    /**
     * @param audit        where each change is recorded
     * @param clock        the log's clock, which judges schedules
     * @param versionRates where the rates of every version are published after each change
     * @param regions      whether this node decides regional policies against its region's share
     */
    PolicyCatalogue(final AuditTrail audit, final LogClock clock, final VersionRates versionRates,
        final boolean regions)
    {
        this.audit = audit;
        this.clock = clock;
        this.versionRates = versionRates;
        this.regions = regions;
    }

    /** The policy set in force (any thread). */
    PolicySetIndex index()
    {
        return index;
    }

    /** Whether the first policy set has been installed (any thread). */
    boolean bootstrapped()
    {
        return bootstrapped;
    }

    /**
     * After any command: scheduled versions whose time came between {@code before} and the log's
     * clock now take effect. A command that changed nothing then answers with the new set version.
     */
    Outcome afterCommand(final PolicyCommand command, final long before, final Outcome outcome)
    {
        final boolean activated = bootstrapped && activateScheduled(command, before);
        return activated && outcome.status() == Status.IGNORED ?
            Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion).build()) : outcome;
    }

    /** Scheduled versions whose time came between {@code before} and now: in force from this command on. */
    private boolean activateScheduled(final PolicyCommand command, final long before)
    {
        final long now = clock.millis();
        final List<String[]> due = new ArrayList<>();
        for (final History history : byId.values())
        {
            for (final PolicyVersion version : history.versions)
            {
                final long from = PolicyVersions.effectiveFromMillis(version);
                if (from > before && from <= now && !version.getBlocked())
                {
                    due.add(new String[] {history.id, Long.toString(version.getPolicy().getVersion())});
                }
            }
        }
        if (due.isEmpty())
        {
            return false;
        }
        // In version order within a policy, policies in creation order: the same on every replica.
        for (final String[] entry : due)
        {
            final History history = byId.get(entry[0]);
            final int at = Integer.parseInt(entry[1]) - 1;
            final PolicyVersion version = history.versions.get(at);
            try
            {
                provisional.clear();
                PolicySetIndex.compile(inForceSet("", null, now), this::ordinalForCompile);
                assignOrdinal(history, PolicyVersions.isShadow(version));
                setVersion++;
                record(command, "POLICY_IN_FORCE", history.id, version.getPolicy().getVersion(),
                    version.getPolicy().getOwner(), version.getPolicy().getReason(), "scheduled version took effect");
            }
            catch (final PolicyValidationException e)
            {
                // Another change since it was scheduled would make the set invalid with it: it never takes effect.
                history.versions.set(at, version.toBuilder().setBlocked(true).build());
                record(command, "POLICY_SCHEDULE_BLOCKED", history.id, version.getPolicy().getVersion(),
                    version.getPolicy().getOwner(), version.getPolicy().getReason(),
                    "not in force: " + String.join("; ", e.errors()));
            }
        }
        install();
        return true;
    }


    /** Whether a scheduled version's time has come by {@code nowMillis} (the leader then ticks). */
    boolean scheduledDue(final long nowMillis)
    {
        final long applied = clock.millis();
        for (final History history : byId.values())
        {
            for (final PolicyVersion version : history.versions)
            {
                final long from = PolicyVersions.effectiveFromMillis(version);
                if (from > applied && from <= nowMillis && !version.getBlocked())
                {
                    return true;
                }
            }
        }
        return false;
    }

    Outcome bootstrap(final PolicyCommand command)
    {
        if (bootstrapped)
        {
            return new Outcome(Status.IGNORED, ChangeResult.newBuilder().setSetVersion(setVersion).build(), null);
        }
        final PolicySet file = command.getBootstrap();
        final PolicySetIndex compiled;
        try
        {
            compiled = PolicySetIndex.compile(file);
        }
        catch (final PolicyValidationException e)
        {
            return Outcome.invalid("the policy file is invalid", e.errors());
        }
        // The file's order becomes the ordinals: policies first, the default last (as compile numbers them).
        for (final CompiledPolicy policy : compiled.policies())
        {
            final History history = new History(policy.id(), regions);
            history.add(PolicyVersion.newBuilder()
                .setPolicy(policy.source().toBuilder().setVersion(1).build())
                .setActor(command.getActor())
                .setCreatedAt(command.getAt())
                .build());
            byId.put(history.id, history);
            assignOrdinal(history, policy.shadow());
        }
        defaultId = compiled.defaultPolicy().id();
        setVersion = Math.max(1, file.getVersion());
        bootstrapped = true;
        install();
        record(command, "POLICIES_BOOTSTRAPPED", "", 0, "", "seed of a new cluster",
            compiled.size() + " policies from the policy file");
        return Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion).build());
    }

    Outcome put(final PolicyCommand command)
    {
        final long at = PolicyVersions.millis(command.getAt());
        // A time already passed means now.
        Policy wanted = command.getPut().hasEffectiveFrom() &&
            PolicyVersions.millis(command.getPut().getEffectiveFrom()) <= at ?
            command.getPut().toBuilder().clearEffectiveFrom().build() : command.getPut();
        final List<String> rolloutErrors = new ArrayList<>();
        if (wanted.hasRollout())
        {
            // The tenants left out stay on what was enforced before the rollout began.
            final History current = byId.get(wanted.getId());
            final PolicyVersion enforcedNow = current == null ? null :
                PolicyVersions.enforced(current.versions, clock.millis());
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
        if (wanted.getMode() == Mode.SHADOW && wanted.getId().equals(defaultId))
        {
            errors.add("policy.mode: the default policy cannot be shadowed; shadow a policy with a selector instead");
        }
        if (!errors.isEmpty())
        {
            return Outcome.invalid("policy " + wanted.getId() + " is invalid; nothing changed", errors);
        }
        final History existing = byId.get(wanted.getId());
        final long newest = existing == null ? 0 : existing.versions.size();
        if (command.getExpectedVersion() != 0 && command.getExpectedVersion() != newest)
        {
            return new Outcome(Status.CONFLICT, null, AdminError.newBuilder()
                .setError("policy " + wanted.getId() + " is at version " + newest + ", not " +
                    command.getExpectedVersion() +
                    ": it changed since you read it; read it again and redo the change (nothing changed)").build());
        }
        if (existing != null && existing.inForce() && PolicyDiff.samePolicy(existing.latest().getPolicy(), wanted))
        {
            return Outcome.invalid("policy " + wanted.getId() + " version " + existing.versions.size() +
                " already says exactly this; nothing changed", List.of());
        }
        final long version = existing == null ? 1 : existing.versions.size() + 1;
        final PolicyVersion made = PolicyVersion.newBuilder()
            .setPolicy(wanted.toBuilder().setVersion(version).build())
            .setActor(command.getActor())
            .setCreatedAt(command.getAt())
            .build();
        final String detail = (existing == null || !existing.inForce() ? PolicyDiff.describe(wanted) :
            PolicyDiff.diff(existing.latest().getPolicy(), wanted)) +
            (wanted.hasEffectiveFrom() ? "; in force from " + Timestamps.toString(wanted.getEffectiveFrom()) : "");
        final String action = wanted.hasRollout() ? "POLICY_ROLLOUT" :
            existing == null || !existing.inForce() ? "POLICY_CREATED" : "POLICY_UPDATED";
        return commit(command, existing, wanted.getId(), made, action, wanted.getReason(),
            wanted.hasRollout() ? PolicyDiff.rolloutDetail(wanted) + "; " + detail : detail);
    }

    Outcome rollback(final PolicyCommand command)
    {
        final RollbackCommand rollback = command.getRollback();
        final History history = byId.get(rollback.getId());
        if (history == null)
        {
            return Outcome.notFound("no policy " + rollback.getId() + " (see ./limiter policy list)");
        }
        final List<String> errors = new ArrayList<>();
        if (rollback.getReason().isBlank())
        {
            errors.add("reason: required (why roll back)");
        }
        final int count = history.versions.size();
        if (rollback.getToVersion() < 1 || rollback.getToVersion() > count)
        {
            errors.add("toVersion: " + rollback.getToVersion() + " is not a version of " + history.id +
                " (1.." + count + ")");
        }
        else if (history.versions.get((int)rollback.getToVersion() - 1).getDeleted())
        {
            errors.add("toVersion: version " + rollback.getToVersion() +
                " is a deletion; roll back to a version before it");
        }
        if (!errors.isEmpty())
        {
            return Outcome.invalid("cannot roll back " + history.id + "; nothing changed", errors);
        }
        final Policy target = history.versions.get((int)rollback.getToVersion() - 1).getPolicy();
        final long version = count + 1;
        // A rollback takes effect at once, whatever the copied version's schedule was.
        final Policy restored =
            target.toBuilder().setVersion(version).setReason(rollback.getReason()).clearEffectiveFrom().build();
        final PolicyVersion made = PolicyVersion.newBuilder()
            .setPolicy(restored)
            .setActor(command.getActor())
            .setCreatedAt(command.getAt())
            .setRolledBackFrom(rollback.getToVersion())
            .build();
        final String detail = "to version " + rollback.getToVersion() +
            (history.inForce() ? ": " + PolicyDiff.diff(history.latest().getPolicy(), target) :
                " (re-creates the deleted policy)");
        return commit(command, history, history.id, made, "POLICY_ROLLED_BACK", rollback.getReason(), detail);
    }

    Outcome delete(final PolicyCommand command)
    {
        final DeleteCommand delete = command.getDelete();
        final History history = byId.get(delete.getId());
        if (history == null || !history.inForce())
        {
            return Outcome.notFound("no policy " + delete.getId() + " in force (see ./limiter policy list)");
        }
        if (history.id.equals(defaultId))
        {
            return Outcome.invalid("the default policy cannot be deleted; change it with put instead", List.of());
        }
        if (delete.getReason().isBlank())
        {
            return Outcome.invalid("cannot delete " + history.id + "; nothing changed",
                List.of("reason: required (why delete it)"));
        }
        final PolicyVersion made = PolicyVersion.newBuilder()
            .setPolicy(history.latest().getPolicy().toBuilder().setVersion(history.versions.size() + 1)
                .setReason(delete.getReason()))
            .setActor(command.getActor())
            .setCreatedAt(command.getAt())
            .setDeleted(true)
            .build();
        return commit(command, history, history.id, made, "POLICY_DELETED", delete.getReason(), "no longer in force");
    }

    /** Compiles the set as it would be with {@code made}; installs it only if it is valid. */
    private Outcome commit(final PolicyCommand command, final History existing, final String id,
        final PolicyVersion made, final String action, final String reason, final String detail)
    {
        final PolicySet candidate = inForceSet(id, made);
        provisional.clear();
        try
        {
            PolicySetIndex.compile(candidate, this::ordinalForCompile);
            // And as it will be once every scheduled version (this one included) has taken effect.
            provisional.clear();
            PolicySetIndex.compile(inForceSet(id, made, Long.MAX_VALUE - 1), this::ordinalForCompile);
        }
        catch (final PolicyValidationException e)
        {
            return Outcome.invalid("the policy set would be invalid with this change; nothing changed", e.errors());
        }
        catch (final IllegalArgumentException e)
        {
            return Outcome.invalid("the cluster has used all " + PolicySetIndex.MAX_POLICIES + " policy ordinals",
                List.of());
        }
        final History history = existing != null ? existing : new History(id, regions);
        if (existing == null)
        {
            byId.put(id, history);
        }
        history.add(made);
        if (!made.getDeleted() && PolicyVersions.effective(made, clock.millis()))
        {
            assignOrdinal(history, made.getPolicy().getMode() == Mode.SHADOW);
        }
        setVersion++;
        install();
        record(command, action, id, made.getPolicy().getVersion(), made.getPolicy().getOwner(), reason, detail);
        return Outcome.ok(ChangeResult.newBuilder().setVersion(made).setSetVersion(setVersion).build());
    }

    private int ordinalForCompile(final Policy policy)
    {
        final boolean shadow = policy.getMode() == Mode.SHADOW;
        final History history = byId.get(policy.getId());
        final int assigned = history == null ? -1 : shadow ? history.shadowOrdinal : history.enforceOrdinal;
        if (assigned >= 0)
        {
            return assigned;
        }
        final String key = policy.getId() + (shadow ? "/shadow" : "");
        final Integer given = provisional.get(key);
        if (given != null)
        {
            return given;
        }
        final int next = byOrdinal.size() + provisional.size();
        provisional.put(key, next);
        return next;
    }

    private void assignOrdinal(final History history, final boolean shadow)
    {
        if ((shadow ? history.shadowOrdinal : history.enforceOrdinal) >= 0)
        {
            return;
        }
        final int ordinal = byOrdinal.size();
        byOrdinal.add(new Slot(history, shadow));
        if (shadow)
        {
            history.shadowOrdinal = ordinal;
        }
        else
        {
            history.enforceOrdinal = ordinal;
        }
    }

    /** The set in force, with {@code replacement} (a new version of its id) in place of the current one. */
    private PolicySet inForceSet(final String replacedId, final PolicyVersion replacement)
    {
        return inForceSet(replacedId, replacement, clock.millis());
    }

    private PolicySet inForceSet(final String replacedId, final PolicyVersion replacement, final long nowMillis)
    {
        final PolicySet.Builder set = PolicySet.newBuilder().setVersion(setVersion + 1);
        boolean placed = false;
        for (final History history : byId.values())
        {
            List<PolicyVersion> versions = history.versions;
            if (history.id.equals(replacedId))
            {
                versions = new ArrayList<>(versions);
                versions.add(replacement);
                placed = true;
            }
            add(set, PolicyVersions.enforced(versions, nowMillis));
            add(set, PolicyVersions.shadowed(versions, nowMillis));
        }
        if (!placed && replacement != null)
        {
            add(set, PolicyVersions.enforced(List.of(replacement), nowMillis));
            add(set, PolicyVersions.shadowed(List.of(replacement), nowMillis));
        }
        return set.build();
    }

    private void add(final PolicySet.Builder set, final PolicyVersion version)
    {
        if (version == null || version.getDeleted())
        {
            return;
        }
        if (version.getPolicy().getId().equals(defaultId) && !PolicyVersions.isShadow(version))
        {
            set.setDefaultPolicy(version.getPolicy());
        }
        else
        {
            set.addPolicies(version.getPolicy());
        }
    }

    private void install()
    {
        provisional.clear();
        index = PolicySetIndex.compile(inForceSet("", null).toBuilder().setVersion(setVersion).build(),
            this::ordinalForCompile);
        final Limit[] rates = new Limit[byOrdinal.size()];
        for (int ordinal = 0; ordinal < rates.length; ordinal++)
        {
            // A sweep asks of a bucket under this ordinal: the newest version of the ordinal's mode.
            final Slot slot = byOrdinal.get(ordinal);
            final History history = slot.history();
            rates[ordinal] = history.rates.get(0)[0];
            for (int v = history.versions.size() - 1; v >= 0; v--)
            {
                final PolicyVersion version = history.versions.get(v);
                if (!version.getDeleted() && PolicyVersions.isShadow(version) == slot.shadow())
                {
                    rates[ordinal] = history.rates.get(v)[0];
                    break;
                }
            }
        }
        final List<List<Limit[]>> byVersion = new ArrayList<>(byOrdinal.size());
        final List<List<Boolean>> split = new ArrayList<>(byOrdinal.size());
        for (final Slot slot : byOrdinal)
        {
            byVersion.add(slot.history().rates);
            split.add(slot.history().split);
        }
        versionRates.publish(rates, byVersion, split);
    }

    private void record(final PolicyCommand command, final String action, final String id, final long version,
        final String owner, final String reason, final String detail)
    {
        audit.record(command, action, id, version, owner, reason, detail);
    }


    /** Version of the whole set: bumped by every change. */
    long setVersion()
    {
        return setVersion;
    }

    /** The set in force, each policy with its version, owner and reason. */
    PolicySet inForce()
    {
        return inForceSet("", null).toBuilder().setVersion(setVersion).build();
    }

    /** The version in force of one policy, or null. */
    Policy current(final String id)
    {
        final History history = byId.get(id);
        if (history == null)
        {
            return null;
        }
        final PolicyVersion enforced = PolicyVersions.enforced(history.versions, clock.millis());
        final PolicyVersion version = enforced != null ? enforced :
            PolicyVersions.shadowed(history.versions, clock.millis());
        return version == null ? null : version.getPolicy();
    }

    /** The ordinals an id holds (enforced, shadow), those assigned; empty when none. */
    int[] ordinalsOf(final String id)
    {
        final History history = byId.get(id);
        if (history == null)
        {
            return new int[0];
        }
        return IntStream.of(history.enforceOrdinal, history.shadowOrdinal).filter(o -> o >= 0).toArray();
    }

    /** The policy behind a bucket key: version {@code version} of whatever holds {@code ordinal}, or null. */
    Policy policyAt(final int ordinal, final long version)
    {
        if (ordinal < 0 || ordinal >= byOrdinal.size())
        {
            return null;
        }
        for (final PolicyVersion v : byOrdinal.get(ordinal).history().versions)
        {
            if (v.getPolicy().getVersion() == version)
            {
                return v.getPolicy();
            }
        }
        return null;
    }

    /** Every version of one policy, oldest first, or null when the id was never used. */
    PolicyHistory history(final String id)
    {
        final History history = byId.get(id);
        return history == null ? null : PolicyHistory.newBuilder().setId(id).addAllVersions(history.versions).build();
    }


    void writeTo(final PolicyStateSnapshot.Builder snapshot)
    {
        snapshot.setDefaultId(defaultId).setSetVersion(setVersion).setBootstrapped(bootstrapped);
        for (final History history : byId.values())
        {
            snapshot.addHistories(PolicyHistory.newBuilder().setId(history.id).addAllVersions(history.versions));
        }
        for (final Slot slot : byOrdinal)
        {
            snapshot.addOrdinals(OrdinalSlot.newBuilder().setId(slot.history().id).setShadow(slot.shadow()));
        }
    }

    /** Takes the snapshot's histories and ordinals; {@link #publish()} compiles and publishes them. */
    void restoreFrom(final PolicyStateSnapshot snapshot)
    {
        byOrdinal.clear();
        byId.clear();
        for (final PolicyHistory stored : snapshot.getHistoriesList())
        {
            final History history = new History(stored.getId(), regions);
            stored.getVersionsList().forEach(history::add);
            byId.put(history.id, history);
        }
        for (final OrdinalSlot slot : snapshot.getOrdinalsList())
        {
            assignOrdinal(byId.get(slot.getId()), slot.getShadow());
        }
        defaultId = snapshot.getDefaultId();
        setVersion = snapshot.getSetVersion();
        bootstrapped = snapshot.getBootstrapped();
    }

    /** After a restore: the set in force and its rates, or none before the first set. */
    void publish()
    {
        if (bootstrapped)
        {
            install();
        }
        else
        {
            index = PolicySetIndex.compile(PolicySet.getDefaultInstance());
            versionRates.clear();
        }
    }
}
