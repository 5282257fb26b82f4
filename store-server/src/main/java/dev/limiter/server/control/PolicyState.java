package dev.limiter.server.control;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Timestamp;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.OrdinalSlot;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.protocol.policy.RollbackCommand;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.IntStream;

/**
 * The control plane's replicated state: every version of every policy, the set in force, and the
 * audit trail. It changes only through {@link #apply(PolicyCommand)}, which the Raft apply thread
 * (or, on a single node, the admin API) calls with commands that carry their own time and actor,
 * so every replica reaches the same state. Versions are immutable: a change, a rollback or a
 * deletion appends one.
 * <p>
 * A policy id keeps one ordinal per mode (enforced, shadow) for the life of the cluster; bucket
 * keys carry the ordinal and
 * the version they were decided under, so a new version starts new buckets and a replica replays
 * a decision with the rate it was made under ({@link #rate(int, long)}), even when the entry is
 * applied after a later version.
 * <p>
 * Reads from other threads go through the volatile {@link #index()} and {@link #latestRate(int)};
 * everything else is synchronized (admin calls are rare).
 * <p>
 * The audit trail ({@link AuditTrail}), the exemptions ({@link ExemptionBook}), which version is
 * in force ({@link PolicyVersions}) and how a change reads ({@link PolicyDiff}) live in classes of
 * their own. What stays here changes together in every command: policy histories, ordinals, the
 * set in force and the rate tables (a put is checked by compiling the set it would make, with the
 * ordinals it would assign, now and once every scheduled version has taken effect), so one class
 * under one lock keeps each command atomic.
 */
public final class PolicyState
{
    private static final Logger LOG = LoggerFactory.getLogger(PolicyState.class);

    /** Audit records kept; older ones are dropped. */
    public static final int MAX_AUDIT_RECORDS = AuditTrail.MAX_RECORDS;
    /** Longest SDK instance id a degraded window may name. */
    public static final int MAX_SDK_CLIENT_LENGTH = DegradedWindows.MAX_SDK_CLIENT_LENGTH;

    /** Result of applying a command. */
    public enum Status
    {
        OK, INVALID, NOT_FOUND, IGNORED, CONFLICT
    }

    /** What {@link #apply} did: a change result, or an error saying why nothing changed. */
    public record Outcome(Status status, ChangeResult result, AdminError error)
    {
        static Outcome ok(final ChangeResult result)
        {
            return new Outcome(Status.OK, result, null);
        }

        static Outcome invalid(final String error, final List<String> errors)
        {
            return new Outcome(Status.INVALID, null, AdminError.newBuilder().setError(error).addAllErrors(errors).build());
        }

        static Outcome notFound(final String error)
        {
            return new Outcome(Status.NOT_FOUND, null, AdminError.newBuilder().setError(error).build());
        }

        /** {@code u8 status | protobuf (ChangeResult or AdminError)}: the reply of a log entry. */
        public ByteBuffer encode()
        {
            final byte[] body = status == Status.OK || status == Status.IGNORED ?
                (result == null ? new byte[0] : result.toByteArray()) : error.toByteArray();
            final ByteBuffer out = ByteBuffer.allocate(1 + body.length);
            out.put((byte)status.ordinal()).put(body);
            return out.flip();
        }

        public static Outcome decode(final ByteBuffer reply)
        {
            final ByteBuffer in = reply.duplicate();
            final Status status = Status.values()[in.get()];
            final byte[] body = new byte[in.remaining()];
            in.get(body);
            try
            {
                return status == Status.OK || status == Status.IGNORED ?
                    new Outcome(status, ChangeResult.parseFrom(body), null) :
                    new Outcome(status, null, AdminError.parseFrom(body));
            }
            catch (final InvalidProtocolBufferException e)
            {
                throw new IllegalStateException("malformed policy change reply", e);
            }
        }
    }

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

        /** Whether this node decides against a region's share of regional policies (their rates then count thousandths of a token). */
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
            return PolicyVersions.enforced(versions, Long.MAX_VALUE - 1) != null || PolicyVersions.shadowed(versions, Long.MAX_VALUE - 1) != null;
        }

        void add(final PolicyVersion version)
        {
            versions.add(version);
            // A tombstone keeps the rate of what it deleted: buckets of that version still refill.
            rates.add(version.getDeleted() && !rates.isEmpty() ? rates.get(rates.size() - 1) : PolicySetIndex.limitsOf(
                regions && version.getPolicy().hasRegional() ? PolicySetIndex.scaledForRegions(version.getPolicy()) : version.getPolicy()));
            split.add(version.getDeleted() && !split.isEmpty() ? split.get(split.size() - 1) : CompiledPolicy.splitsAcrossShards(version.getPolicy()));
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
    private final AuditTrail audit = new AuditTrail();
    private final ExemptionBook exemptions = new ExemptionBook(audit, this::setVersionHeld);
    private final DegradedWindows degradedWindows = new DegradedWindows(audit, this::setVersionHeld);
    private final MembershipAudit membership = new MembershipAudit(audit, this::setVersionHeld);
    private final RegionShareBook regionShares = new RegionShareBook(this::setVersionHeld);
    /** Each command type to the owner of the state it changes. */
    private final CommandTable commands = new CommandTable();
    private String defaultId = "";
    private long setVersion;
    private volatile boolean bootstrapped;
    private volatile PolicySetIndex index = PolicySetIndex.compile(PolicySet.getDefaultInstance());
    private volatile Limit[] latestRates = new Limit[0];
    /**
     * Limits by ordinal, then version - 1, then limit index (the policy's own, then its extra
     * limits), then shard: every version a bucket may have been decided under. One limit when the
     * version's buckets have the same on every shard, one share per shard when it is split across
     * shards, null when it cannot be split this many ways (refused when changed, so no bucket has it).
     */
    private volatile Limit[][][][] versionRates = new Limit[0][][][];
    private final int shards;
    private final boolean regions;
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
    private final List<Runnable> regionSharesListeners = new CopyOnWriteArrayList<>();
    /** The latest command time applied: the cluster's wall clock as the log has seen it. */
    private Timestamp clock = Timestamp.getDefaultInstance();

    /** A state for a node with one shard. */
    public PolicyState()
    {
        this(1);
    }

    /**
     * @param shards the node's shard count: a stacked GLOBAL or CLIENT_IP budget keeps one equal
     *               share on each ({@link CompiledPolicy#splitsAcrossShards}), and a replica replays
     *               and sweeps its buckets at their shard's share
     */
    public PolicyState(final int shards)
    {
        this(shards, false);
    }

    /**
     * @param regions whether this node belongs to a region of several ({@code --region}): it then
     *                decides regional policies against its region's share, counting their limits in
     *                thousandths of a token ({@link PolicySetIndex#scaledForRegions})
     */
    public PolicyState(final int shards, final boolean regions)
    {
        this.shards = shards;
        this.regions = regions;
        commands
            .on(PolicyCommand.ChangeCase.BOOTSTRAP, CommandTable.Audience.POLICY_SET, this::bootstrap)
            .on(PolicyCommand.ChangeCase.PUT, CommandTable.Audience.POLICY_SET, this::put)
            .on(PolicyCommand.ChangeCase.ROLLBACK, CommandTable.Audience.POLICY_SET, this::rollback)
            .on(PolicyCommand.ChangeCase.DELETE, CommandTable.Audience.POLICY_SET, this::delete)
            .on(PolicyCommand.ChangeCase.EXEMPT, CommandTable.Audience.POLICY_SET, exemptions::exempt)
            .on(PolicyCommand.ChangeCase.UNEXEMPT, CommandTable.Audience.POLICY_SET, exemptions::unexempt)
            .on(PolicyCommand.ChangeCase.TICK, CommandTable.Audience.POLICY_SET, exemptions::tick)
            .on(PolicyCommand.ChangeCase.DEGRADED, CommandTable.Audience.POLICY_SET, degradedWindows::apply)
            .on(PolicyCommand.ChangeCase.MEMBERS, CommandTable.Audience.POLICY_SET, membership::apply)
            .on(PolicyCommand.ChangeCase.REGION_SHARES, CommandTable.Audience.REGION_SHARES, regionShares::apply);
    }

    /** The set version every reply names (the caller holds the lock). */
    private long setVersionHeld()
    {
        return setVersion;
    }

    /** Furthest ahead a version may be scheduled. */
    public static final long MAX_SCHEDULE_MILLIS = 366L * 24 * 3600 * 1000;

    /** Longest an exemption may last. */
    public static final long MAX_EXEMPTION_MILLIS = 90L * 24 * 3600 * 1000;

    /** The policy set in force: read on every frame. */
    public PolicySetIndex index()
    {
        return index;
    }

    /** Whether the first policy set has been installed (until then the cluster does not decide). */
    public boolean bootstrapped()
    {
        return bootstrapped;
    }

    /**
     * Rate of the newest version of the policy with this ordinal, in force or deleted (what a sweep
     * asks of a stored bucket); the built-in default for an ordinal never assigned.
     */
    public Limit latestRate(final int ordinal)
    {
        final Limit[] rates = latestRates;
        return ordinal < rates.length ? rates[ordinal] : PolicySetIndex.limitOf(PolicySetIndex.BUILT_IN_DEFAULT);
    }

    /**
     * Rate of one version of a policy's buckets on one shard (replaying a decision made under it).
     *
     * @throws IllegalStateException when no such version exists: the log and this state disagree
     */
    public Limit rate(final int ordinal, final long version, final int shard)
    {
        return rate(ordinal, version, 0, shard);
    }

    /**
     * Limit {@code limitIndex} (0: the policy's own; k: its extra limit k - 1) of one version of a
     * policy's buckets on one shard (replaying a decision made under it).
     *
     * @throws IllegalStateException when no such version exists: the log and this state disagree
     */
    public Limit rate(final int ordinal, final long version, final int limitIndex, final int shard)
    {
        final Limit rate = rateIfKnown(ordinal, version, limitIndex, shard);
        if (rate == null)
        {
            throw new IllegalStateException("a decision names policy ordinal " + ordinal + " version " + version +
                ", which this replica does not have");
        }
        return rate;
    }

    /**
     * Limit of one version of a policy's buckets on one shard (the same on every shard unless the
     * version is split across shards), or null when this replica does not have that version (yet).
     *
     */
    public Limit rateIfKnown(final int ordinal, final long version, final int shard)
    {
        return rateIfKnown(ordinal, version, 0, shard);
    }

    /** Set by {@link #stopWaiting()}; guarded by this. */
    private boolean stopping;

    /**
     * The node is stopping: a replicated decision waiting in {@link #awaitRate} for a policy version
     * stops waiting, so that its group's apply thread ends (Ratis joins it when it closes the group
     * and never interrupts it; a node whose control group had fallen behind did not stop on SIGTERM).
     */
    public void stopWaiting()
    {
        synchronized (this)
        {
            stopping = true;
            notifyAll();
        }
    }

    /** Limit {@code limitIndex} of one version of a policy on one shard, or null when this replica does not have it (yet). */
    public Limit rateIfKnown(final int ordinal, final long version, final int limitIndex, final int shard)
    {
        // Read for every replayed decision: a volatile read of an immutable table, no lock.
        final Limit[][][][] rates = versionRates;
        if (ordinal >= rates.length || version < 1 || version > rates[ordinal].length)
        {
            return null;
        }
        final Limit[][] byLimit = rates[ordinal][(int)(version - 1)];
        final Limit[] byShard = byLimit == null || limitIndex >= byLimit.length ? null : byLimit[limitIndex];
        if (byShard == null)
        {
            return null;
        }
        return byShard.length == 1 ? byShard[0] : shard < byShard.length ? byShard[shard] : null;
    }

    /**
     * Rate of one version of a policy, waiting until this replica has applied it. Decisions kept
     * in another Raft group than the policy changes may reach a replica before the version they
     * were made under (never on the node that made them), so their group's apply thread waits for
     * the control group here; the control group never waits for anything, so this cannot deadlock.
     *
     * @throws IllegalStateException when interrupted, or once {@link #stopWaiting()} was called (the node is stopping)
     */
    public Limit awaitRate(final int ordinal, final long version, final int limitIndex, final int shard)
    {
        final Limit known = rateIfKnown(ordinal, version, limitIndex, shard);
        if (known != null)
        {
            return known;
        }
        final long start = System.nanoTime();
        long warned = start;
        synchronized (this)
        {
            Limit rate;
            while ((rate = rateIfKnown(ordinal, version, limitIndex, shard)) == null)
            {
                if (stopping)
                {
                    throw new IllegalStateException("the node is stopping: stopped waiting for policy ordinal " + ordinal +
                        " version " + version + " (the decision is applied again from the log after a restart)");
                }
                try
                {
                    wait(1000);
                }
                catch (final InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("stopped waiting for policy ordinal " + ordinal + " version " + version, e);
                }
                if (System.nanoTime() - warned > TimeUnit.SECONDS.toNanos(10))
                {
                    warned = System.nanoTime();
                    LOG.warn("a replicated decision waits {} s for policy ordinal {} version {} (the control group is behind here)",
                        TimeUnit.NANOSECONDS.toSeconds(warned - start), ordinal, version);
                }
            }
            return rate;
        }
    }

    /** {@code listener} runs after every REGION_SHARES command applied and every restore (on the applying thread). */
    public void onRegionShares(final Runnable listener)
    {
        regionSharesListeners.add(listener);
    }

    /** {@code listener} runs after every change, on the thread that applied it. */
    public void onChange(final Runnable listener)
    {
        listeners.add(listener);
    }

    /**
     * Applies one command. A command that is invalid against the current state changes nothing
     * and says why. Deterministic: the same commands in the same order give the same state.
     */
    public Outcome apply(final PolicyCommand command)
    {
        final Outcome outcome;
        synchronized (this)
        {
            outcome = dispatch(command);
            notifyAll(); // decisions of other groups may wait for a version (awaitRate)
        }
        if (outcome.status() == Status.OK)
        {
            (commands.audience(command.getChangeCase()) == CommandTable.Audience.REGION_SHARES ? regionSharesListeners : listeners)
                .forEach(Runnable::run);
        }
        return outcome;
    }

    /**
     * What {@link #apply} would answer, without changing anything (the leader checks a change
     * before it goes to the log, so a bad one is refused at once). The command runs against a copy:
     * nothing the data plane or a replica reads ({@link #index()}, rates, exemptions) ever holds
     * a state that was not applied.
     */
    public Outcome check(final PolicyCommand command)
    {
        final PolicyState copy = new PolicyState(shards, regions);
        synchronized (this)
        {
            // The audit trail is not copied: a check records nothing, and no command's validity depends on it.
            copy.restoreQuietly(snapshot(false), false);
        }
        copy.exemptions.compile();
        return copy.dispatch(command);
    }

    /**
     * The clock first (a command is judged at its own time), then the change, then whatever
     * scheduled versions that time brought into force.
     */
    private Outcome dispatch(final PolicyCommand command)
    {
        final long before = clockMillis();
        advanceClock(command);
        final Outcome outcome = commands.apply(command);
        final boolean activated = bootstrapped && activateScheduled(command, before);
        return activated && outcome.status() == Status.IGNORED ?
            Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion).build()) : outcome;
    }

    /** Scheduled versions whose time came between {@code before} and now: in force from this command on. */
    private boolean activateScheduled(final PolicyCommand command, final long before)
    {
        final long now = clockMillis();
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
                record(command, "POLICY_IN_FORCE", history.id, version.getPolicy().getVersion(), version.getPolicy().getOwner(),
                    version.getPolicy().getReason(), "scheduled version took effect");
            }
            catch (final PolicyValidationException e)
            {
                // Another change since it was scheduled would make the set invalid with it: it never takes effect.
                history.versions.set(at, version.toBuilder().setBlocked(true).build());
                record(command, "POLICY_SCHEDULE_BLOCKED", history.id, version.getPolicy().getVersion(), version.getPolicy().getOwner(),
                    version.getPolicy().getReason(), "not in force: " + String.join("; ", e.errors()));
            }
        }
        install();
        return true;
    }


    private long clockMillis()
    {
        return PolicyVersions.millis(clock);
    }

    /** Whether a scheduled version's time has come by {@code nowMillis} (the leader then ticks). */
    public synchronized boolean scheduledDue(final long nowMillis)
    {
        final long applied = clockMillis();
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

    private Outcome bootstrap(final PolicyCommand command)
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

    private Outcome put(final PolicyCommand command)
    {
        final long at = PolicyVersions.millis(command.getAt());
        Policy wanted = command.getPut().hasEffectiveFrom() && PolicyVersions.millis(command.getPut().getEffectiveFrom()) <= at ?
            command.getPut().toBuilder().clearEffectiveFrom().build() : command.getPut(); // a time already passed means now
        final List<String> rolloutErrors = new ArrayList<>();
        if (wanted.hasRollout())
        {
            // The tenants left out stay on what was enforced before the rollout began.
            final History current = byId.get(wanted.getId());
            final PolicyVersion enforcedNow = current == null ? null : PolicyVersions.enforced(current.versions, clockMillis());
            if (enforcedNow == null)
            {
                rolloutErrors.add("policy.rollout: needs a version of this policy in force to start from; put one without a rollout first");
                wanted = wanted.toBuilder().clearRollout().build();
            }
            else
            {
                final Policy base = enforcedNow.getPolicy().hasRollout() ? enforcedNow.getPolicy().getRollout().getFallback() : enforcedNow.getPolicy();
                if (!base.getSelector().equals(wanted.getSelector()))
                {
                    rolloutErrors.add("policy.selector: must stay as in version " + base.getVersion() +
                        " during a rollout (the tenants left out stay on it); finish or roll back the rollout first");
                }
                wanted = wanted.toBuilder().setRollout(wanted.getRollout().toBuilder().setFallback(base)).build();
            }
        }
        final List<String> errors = new ArrayList<>(rolloutErrors.isEmpty() ? PolicySetIndex.validatePolicy(wanted) : rolloutErrors);
        if (wanted.getReason().isBlank())
        {
            errors.add("policy.reason: required (why this version exists)");
        }
        if (wanted.hasEffectiveFrom() && PolicyVersions.millis(wanted.getEffectiveFrom()) - at > MAX_SCHEDULE_MILLIS)
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
                .setError("policy " + wanted.getId() + " is at version " + newest + ", not " + command.getExpectedVersion() +
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
        final String detail = (existing == null || !existing.inForce() ? PolicyDiff.describe(wanted) : PolicyDiff.diff(existing.latest().getPolicy(), wanted)) +
            (wanted.hasEffectiveFrom() ? "; in force from " + Timestamps.toString(wanted.getEffectiveFrom()) : "");
        final String action = wanted.hasRollout() ? "POLICY_ROLLOUT" :
            existing == null || !existing.inForce() ? "POLICY_CREATED" : "POLICY_UPDATED";
        return commit(command, existing, wanted.getId(), made, action, wanted.getReason(), wanted.hasRollout() ? PolicyDiff.rolloutDetail(wanted) + "; " + detail : detail);
    }

    private Outcome rollback(final PolicyCommand command)
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
            errors.add("toVersion: " + rollback.getToVersion() + " is not a version of " + history.id + " (1.." + count + ")");
        }
        else if (history.versions.get((int)rollback.getToVersion() - 1).getDeleted())
        {
            errors.add("toVersion: version " + rollback.getToVersion() + " is a deletion; roll back to a version before it");
        }
        if (!errors.isEmpty())
        {
            return Outcome.invalid("cannot roll back " + history.id + "; nothing changed", errors);
        }
        final Policy target = history.versions.get((int)rollback.getToVersion() - 1).getPolicy();
        final long version = count + 1;
        // A rollback takes effect at once, whatever the copied version's schedule was.
        final Policy restored = target.toBuilder().setVersion(version).setReason(rollback.getReason()).clearEffectiveFrom().build();
        final PolicyVersion made = PolicyVersion.newBuilder()
            .setPolicy(restored)
            .setActor(command.getActor())
            .setCreatedAt(command.getAt())
            .setRolledBackFrom(rollback.getToVersion())
            .build();
        final String detail = "to version " + rollback.getToVersion() +
            (history.inForce() ? ": " + PolicyDiff.diff(history.latest().getPolicy(), target) : " (re-creates the deleted policy)");
        return commit(command, history, history.id, made, "POLICY_ROLLED_BACK", rollback.getReason(), detail);
    }

    private Outcome delete(final PolicyCommand command)
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
            return Outcome.invalid("cannot delete " + history.id + "; nothing changed", List.of("reason: required (why delete it)"));
        }
        final PolicyVersion made = PolicyVersion.newBuilder()
            .setPolicy(history.latest().getPolicy().toBuilder().setVersion(history.versions.size() + 1).setReason(delete.getReason()))
            .setActor(command.getActor())
            .setCreatedAt(command.getAt())
            .setDeleted(true)
            .build();
        return commit(command, history, history.id, made, "POLICY_DELETED", delete.getReason(), "no longer in force");
    }

    /** Compiles the set as it would be with {@code made}; installs it only if it is valid. */
    private Outcome commit(final PolicyCommand command, final History existing, final String id, final PolicyVersion made,
        final String action, final String reason, final String detail)
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
            return Outcome.invalid("the cluster has used all " + PolicySetIndex.MAX_POLICIES + " policy ordinals", List.of());
        }
        final History history = existing != null ? existing : new History(id, regions);
        if (existing == null)
        {
            byId.put(id, history);
        }
        history.add(made);
        if (!made.getDeleted() && PolicyVersions.effective(made, clockMillis()))
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
        return inForceSet(replacedId, replacement, clockMillis());
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
        index = PolicySetIndex.compile(inForceSet("", null).toBuilder().setVersion(setVersion).build(), this::ordinalForCompile);
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
        latestRates = rates;
        final Limit[][][][] byVersion = new Limit[byOrdinal.size()][][][];
        for (int ordinal = 0; ordinal < byVersion.length; ordinal++)
        {
            final History history = byOrdinal.get(ordinal).history();
            byVersion[ordinal] = new Limit[history.rates.size()][][];
            for (int v = 0; v < history.rates.size(); v++)
            {
                final Limit[] limits = history.rates.get(v);
                byVersion[ordinal][v] = new Limit[limits.length][];
                for (int k = 0; k < limits.length; k++)
                {
                    byVersion[ordinal][v][k] = ratesByShard(limits[k], history.split.get(v));
                }
            }
        }
        versionRates = byVersion;
    }

    private Limit[] ratesByShard(final Limit rate, final boolean split)
    {
        if (!split || shards <= 1)
        {
            return new Limit[] {rate};
        }
        try
        {
            return CompiledPolicy.shares(rate, shards);
        }
        catch (final IllegalArgumentException e)
        {
            return null; // cannot be split this many ways: refused when changed, so no bucket was decided under it here
        }
    }

    private void record(final PolicyCommand command, final String action, final String id, final long version, final String owner,
        final String reason, final String detail)
    {
        audit.record(command, action, id, version, owner, reason, detail);
    }

    /** Why a node must not take this window (checked on the node that receives it and again in apply), or null. */
    public static String degradedWindowProblem(final DegradedWindow window)
    {
        return DegradedWindows.problem(window);
    }

    /** This region's shares (millionths) of regional policies, by policy id, as last committed; empty before any. */
    public Map<String, Integer> regionShares()
    {
        return regionShares.shares();
    }

    /**
     * The same shares with their generation, as one value: how many REGION_SHARES commands this state
     * has applied (a replica's copy in another Raft group names the generation it copied).
     */
    public RegionShares committedShares()
    {
        return regionShares.committed();
    }

    private void advanceClock(final PolicyCommand command)
    {
        if (Timestamps.compare(command.getAt(), clock) > 0)
        {
            clock = command.getAt();
        }
    }

    /** The exemptions in force, for the request path. */
    public ActiveExemptions activeExemptions()
    {
        return exemptions.active();
    }

    /** Active exemptions, in creation order. */
    public synchronized List<Exemption> exemptions()
    {
        return exemptions.list();
    }

    /**
     * What the leader's next tick reports: decisions bypassed on this node since {@code reported}
     * (which the caller advances once the tick has committed).
     */
    public Map<String, Long> bypassesSince(final Map<String, Long> reported)
    {
        return exemptions.bypassesSince(reported);
    }

    /** Bypasses counted on this node for one exemption (0 when unknown). */
    public long bypassesHere(final String id)
    {
        return exemptions.bypassesHere(id);
    }

    // ---- Reads (admin API) ----

    /** Version of the whole set: bumped by every change. */
    public synchronized long setVersion()
    {
        return setVersion;
    }

    /** The set in force, each policy with its version, owner and reason. */
    public synchronized PolicySet inForce()
    {
        return inForceSet("", null).toBuilder().setVersion(setVersion).build();
    }

    /** The version in force of one policy, or null. */
    public synchronized Policy current(final String id)
    {
        final History history = byId.get(id);
        if (history == null)
        {
            return null;
        }
        final PolicyVersion enforced = PolicyVersions.enforced(history.versions, clockMillis());
        final PolicyVersion version = enforced != null ? enforced : PolicyVersions.shadowed(history.versions, clockMillis());
        return version == null ? null : version.getPolicy();
    }

    /** The ordinals an id holds (enforced, shadow), those assigned; empty when none. */
    public synchronized int[] ordinalsOf(final String id)
    {
        final History history = byId.get(id);
        if (history == null)
        {
            return new int[0];
        }
        return IntStream.of(history.enforceOrdinal, history.shadowOrdinal).filter(o -> o >= 0).toArray();
    }

    /** The policy behind a bucket key: version {@code version} of whatever holds {@code ordinal}, or null. */
    public synchronized Policy policyAt(final int ordinal, final long version)
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
    public synchronized PolicyHistory history(final String id)
    {
        final History history = byId.get(id);
        return history == null ? null : PolicyHistory.newBuilder().setId(id).addAllVersions(history.versions).build();
    }

    /** Audit records matching {@code filter}, oldest first, at most {@code limit} (the newest ones). */
    public synchronized List<AuditRecord> audit(final Predicate<AuditRecord> filter, final int limit)
    {
        return audit.matching(filter, limit);
    }

    // ---- Snapshots ----

    public synchronized PolicyStateSnapshot snapshot()
    {
        return snapshot(true);
    }

    private PolicyStateSnapshot snapshot(final boolean withAudit)
    {
        final PolicyStateSnapshot.Builder out = PolicyStateSnapshot.newBuilder()
            .setClock(clock)
            .setDefaultId(defaultId)
            .setSetVersion(setVersion)
            .setBootstrapped(bootstrapped);
        exemptions.writeTo(out);
        if (withAudit)
        {
            audit.writeTo(out);
        }
        for (final History history : byId.values())
        {
            out.addHistories(PolicyHistory.newBuilder().setId(history.id).addAllVersions(history.versions));
        }
        for (final Slot slot : byOrdinal)
        {
            out.addOrdinals(OrdinalSlot.newBuilder().setId(slot.history().id).setShadow(slot.shadow()));
        }
        regionShares.writeTo(out);
        return out.build();
    }

    public void restore(final PolicyStateSnapshot snapshot)
    {
        synchronized (this)
        {
            restoreQuietly(snapshot, true);
            exemptions.compile();
            if (bootstrapped)
            {
                install();
            }
            else
            {
                index = PolicySetIndex.compile(PolicySet.getDefaultInstance());
                latestRates = new Limit[0];
                versionRates = new Limit[0][][][];
            }
            notifyAll();
        }
        listeners.forEach(Runnable::run);
        regionSharesListeners.forEach(Runnable::run);
    }

    /** @param withAudit false: the audit trail stays as it is (the snapshot has none) */
    private void restoreQuietly(final PolicyStateSnapshot snapshot, final boolean withAudit)
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
        exemptions.restoreFrom(snapshot);
        regionShares.restoreFrom(snapshot);
        clock = snapshot.getClock();
        if (withAudit)
        {
            audit.restoreFrom(snapshot);
        }
    }

    /** Back to nothing (a replica about to replay its log from the start). */
    public void reset()
    {
        restore(PolicyStateSnapshot.getDefaultInstance());
    }

    /** A command stamped with the caller's wall clock (taken once, on the node that accepts it). */
    public static PolicyCommand.Builder command(final String actor, final long wallMillis)
    {
        return PolicyCommand.newBuilder()
            .setActor(actor)
            .setAt(Timestamp.newBuilder().setSeconds(Math.floorDiv(wallMillis, 1000)).setNanos((int)Math.floorMod(wallMillis, 1000) * 1_000_000));
    }
}
