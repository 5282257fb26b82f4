package dev.limiter.server.control;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.OrdinalSlot;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.server.control.PolicyState.Outcome;
import dev.limiter.server.control.PolicyState.Status;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The policy catalogue: every version of every policy, the ordinals they hold, the set in force
 * and its version, and the rates of every version, published to {@link VersionRates}. These change
 * together, in one step: a new version is committed only if the set it makes compiles, with the
 * ordinals it would assign, now and once every scheduled version has taken effect
 * ({@link #commit}); a scheduled version comes into force, or is blocked, as the log's clock passes
 * its time ({@link #afterCommand}). What a policy command asks for and whether it is well-formed
 * is {@link PolicyCommands}'. Not thread-safe: {@link PolicyState} guards it; {@link #index()} and
 * {@link #bootstrapped()} may be read from any thread.
 */
final class PolicyCatalogue
{
    /** Whose ordinal is whose: ordinal i belongs to one policy id in one mode. */
    private record Slot(CataloguedPolicy history, boolean shadow)
    {
    }

    /** A scheduled version whose time has come: version {@code at + 1} of {@code policy}. */
    private record Due(CataloguedPolicy policy, int at)
    {
    }

    private final List<Slot> byOrdinal = new ArrayList<>();
    /** In creation order (the order the set is built in, the same on every replica). */
    private final Map<String, CataloguedPolicy> byId = new LinkedHashMap<>();
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
        final List<Due> due = new ArrayList<>();
        for (final CataloguedPolicy history : byId.values())
        {
            for (int at = 0; at < history.versions.size(); at++)
            {
                final PolicyVersion version = history.versions.get(at);
                final long from = PolicyVersions.effectiveFromMillis(version);
                if (from > before && from <= now && !version.getBlocked())
                {
                    due.add(new Due(history, at));
                }
            }
        }
        if (due.isEmpty())
        {
            return false;
        }
        // In version order within a policy, policies in creation order: the same on every replica.
        for (final Due entry : due)
        {
            final CataloguedPolicy history = entry.policy();
            final int at = entry.at();
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
                history.block(at);
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
        for (final CataloguedPolicy history : byId.values())
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

    /**
     * Installs the first set, from the policy file (compiled): each policy's version 1, the file's
     * order becoming the ordinals (policies first, the default last, as compile numbers them).
     */
    Outcome seed(final PolicyCommand command, final PolicySetIndex compiled)
    {
        for (final CompiledPolicy policy : compiled.policies())
        {
            final CataloguedPolicy history = new CataloguedPolicy(policy.id(), regions);
            history.add(PolicyVersion.newBuilder()
                .setPolicy(policy.source().toBuilder().setVersion(1).build())
                .setActor(command.getActor())
                .setCreatedAt(command.getAt())
                .build());
            byId.put(history.id, history);
            assignOrdinal(history, policy.shadow());
        }
        defaultId = compiled.defaultPolicy().id();
        setVersion = Math.max(1, command.getBootstrap().getVersion());
        bootstrapped = true;
        install();
        record(command, "POLICIES_BOOTSTRAPPED", "", 0, "", "seed of a new cluster",
            compiled.size() + " policies from the policy file");
        return Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion).build());
    }

    /** Every version of policy {@code id}, oldest first (read only), or null when the id was never used. */
    List<PolicyVersion> versions(final String id)
    {
        final CataloguedPolicy history = byId.get(id);
        return history == null ? null : Collections.unmodifiableList(history.versions);
    }

    /** Whether {@code id} names the set's default policy. */
    boolean isDefault(final String id)
    {
        return id.equals(defaultId);
    }

    /**
     * Appends {@code made} to its policy's history if the set stays valid with it, now and once every
     * scheduled version has taken effect: the histories, ordinals, set and rates change together, and
     * the change is recorded as {@code action}. Otherwise nothing changes and the reply says why.
     */
    Outcome commit(final PolicyCommand command, final PolicyVersion made, final String action, final String reason,
        final String detail)
    {
        final String id = made.getPolicy().getId();
        final CataloguedPolicy existing = byId.get(id);
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
        final CataloguedPolicy history = existing != null ? existing : new CataloguedPolicy(id, regions);
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
        final CataloguedPolicy history = byId.get(policy.getId());
        final int assigned = history == null ? -1 : history.ordinal(shadow);
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

    private void assignOrdinal(final CataloguedPolicy history, final boolean shadow)
    {
        if (history.ordinal(shadow) >= 0)
        {
            return;
        }
        history.holdOrdinal(shadow, byOrdinal.size());
        byOrdinal.add(new Slot(history, shadow));
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
        for (final CataloguedPolicy history : byId.values())
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
            final CataloguedPolicy history = slot.history();
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
        final CataloguedPolicy history = byId.get(id);
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
        final CataloguedPolicy history = byId.get(id);
        if (history == null)
        {
            return new int[0];
        }
        return history.ordinals();
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
        final CataloguedPolicy history = byId.get(id);
        return history == null ? null : PolicyHistory.newBuilder().setId(id).addAllVersions(history.versions).build();
    }

    void writeTo(final PolicyStateSnapshot.Builder snapshot)
    {
        snapshot.setDefaultId(defaultId).setSetVersion(setVersion).setBootstrapped(bootstrapped);
        for (final CataloguedPolicy history : byId.values())
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
            final CataloguedPolicy history = new CataloguedPolicy(stored.getId(), regions);
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
