package dev.limiter.server.control;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Timestamp;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.Appeal;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.RegionShares;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

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
 * Reads from other threads go through the volatile {@link #index()}, {@link #latestRate(int)} and
 * rates; everything else is synchronized (admin calls are rare), so each command is atomic.
 * <p>
 * This class is the state machine only: each command type goes through a {@link CommandTable} to
 * the owner of the state it changes, which also writes the entry's reply. The policy catalogue
 * ({@link PolicyCatalogue}: the versions, ordinals and set, and scheduled versions; its commands
 * BOOTSTRAP, PUT, ROLLBACK and DELETE handled by {@link PolicyCommands}), the rates of
 * every version ({@link VersionRates}, which other groups' apply threads wait on), exemptions
 * ({@link ExemptionBook}: EXEMPT, UNEXEMPT, TICK), SDK reports ({@link DegradedWindows}: DEGRADED),
 * membership records ({@link MembershipAudit}: MEMBERS), region shares ({@link RegionShareBook}:
 * REGION_SHARES) and appeals of rejected decisions ({@link AppealBook}: APPEAL). Here stay the
 * log's clock, the order of each command's steps, the listeners, and the snapshot, which each
 * owner writes its part of.
 */
public final class PolicyState
{
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
            return new Outcome(Status.INVALID, null,
                AdminError.newBuilder().setError(error).addAllErrors(errors).build());
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

    private final int shards;
    private final boolean regions;
    private final LogClock clock = new LogClock();
    private final AuditTrail audit = new AuditTrail();
    private final VersionRates versionRates;
    private final PolicyCatalogue catalogue;
    private final ExemptionBook exemptions;
    private final DegradedWindows degradedWindows;
    private final MembershipAudit membership;
    private final RegionShareBook regionShares;
    private final AppealBook appeals;
    /** Each command type to the owner of the state it changes. */
    private final CommandTable commands = new CommandTable();
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
    private final List<Runnable> regionSharesListeners = new CopyOnWriteArrayList<>();

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
        versionRates = new VersionRates(shards);
        catalogue = new PolicyCatalogue(audit, clock, versionRates, regions);
        final PolicyCommands policies = new PolicyCommands(catalogue, clock);
        exemptions = new ExemptionBook(audit, catalogue::setVersion);
        degradedWindows = new DegradedWindows(audit, catalogue::setVersion);
        membership = new MembershipAudit(audit, catalogue::setVersion);
        regionShares = new RegionShareBook(catalogue::setVersion);
        appeals = new AppealBook(audit, catalogue::setVersion, catalogue::history);
        commands
            .on(PolicyCommand.ChangeCase.BOOTSTRAP, CommandTable.Audience.POLICY_SET, policies::bootstrap)
            .on(PolicyCommand.ChangeCase.PUT, CommandTable.Audience.POLICY_SET, policies::put)
            .on(PolicyCommand.ChangeCase.ROLLBACK, CommandTable.Audience.POLICY_SET, policies::rollback)
            .on(PolicyCommand.ChangeCase.DELETE, CommandTable.Audience.POLICY_SET, policies::delete)
            .on(PolicyCommand.ChangeCase.EXEMPT, CommandTable.Audience.POLICY_SET, exemptions::exempt)
            .on(PolicyCommand.ChangeCase.UNEXEMPT, CommandTable.Audience.POLICY_SET, exemptions::unexempt)
            .on(PolicyCommand.ChangeCase.TICK, CommandTable.Audience.POLICY_SET, exemptions::tick)
            .on(PolicyCommand.ChangeCase.DEGRADED, CommandTable.Audience.POLICY_SET, degradedWindows::apply)
            .on(PolicyCommand.ChangeCase.MEMBERS, CommandTable.Audience.POLICY_SET, membership::apply)
            .on(PolicyCommand.ChangeCase.REGION_SHARES, CommandTable.Audience.REGION_SHARES, regionShares::apply)
            .on(PolicyCommand.ChangeCase.APPEAL, CommandTable.Audience.POLICY_SET, appeals::appeal);
    }

    /** Furthest ahead a version may be scheduled. */
    public static final long MAX_SCHEDULE_MILLIS = 366L * 24 * 3600 * 1000;

    /** Longest an exemption may last. */
    public static final long MAX_EXEMPTION_MILLIS = 90L * 24 * 3600 * 1000;

    /** The policy set in force: read on every frame. */
    public PolicySetIndex index()
    {
        return catalogue.index();
    }

    /** Whether the first policy set has been installed (until then the cluster does not decide). */
    public boolean bootstrapped()
    {
        return catalogue.bootstrapped();
    }

    /**
     * Rate of the newest version of the policy with this ordinal, in force or deleted (what a sweep
     * asks of a stored bucket); the built-in default for an ordinal never assigned.
     */
    public Limit latestRate(final int ordinal)
    {
        return versionRates.latest(ordinal);
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
     */
    public Limit rateIfKnown(final int ordinal, final long version, final int shard)
    {
        return rateIfKnown(ordinal, version, 0, shard);
    }

    /**
     * The node is stopping: a replicated decision waiting in {@link #awaitRate} for a policy version
     * stops waiting, so that its group's apply thread ends (Ratis joins it when it closes the group
     * and never interrupts it; a node whose control group had fallen behind did not stop on SIGTERM).
     */
    public void stopWaiting()
    {
        versionRates.stopWaiting();
    }

    /**
     * Limit {@code limitIndex} of one version of a policy on one shard, or null when this replica
     * does not have it (yet).
     */
    public Limit rateIfKnown(final int ordinal, final long version, final int limitIndex, final int shard)
    {
        return versionRates.rateIfKnown(ordinal, version, limitIndex, shard);
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
        return versionRates.await(ordinal, version, limitIndex, shard);
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
        }
        if (outcome.status() == Status.OK)
        {
            (commands.audience(command.getChangeCase()) == CommandTable.Audience.REGION_SHARES ?
                regionSharesListeners : listeners).forEach(Runnable::run);
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
     * The clock first (a command is judged at its own time), then the change by its owner, then
     * whatever scheduled versions that time brought into force.
     */
    private Outcome dispatch(final PolicyCommand command)
    {
        final long before = clock.millis();
        clock.advance(command);
        return catalogue.afterCommand(command, before, commands.apply(command));
    }

    /** Whether a command of this type has an owner here (all but the empty command). */
    boolean handles(final PolicyCommand.ChangeCase type)
    {
        return commands.handles(type);
    }

    /** Whether a scheduled version's time has come by {@code nowMillis} (the leader then ticks). */
    public synchronized boolean scheduledDue(final long nowMillis)
    {
        return catalogue.scheduledDue(nowMillis);
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

    /** Appeals of rejected decisions made at or after {@code sinceMillis}, oldest first. */
    public synchronized List<Appeal> appeals(final long sinceMillis)
    {
        return appeals.since(sinceMillis);
    }

    /** Appeals applied against {@code policy} since the cluster began: its false rejections (any thread). */
    public long falseRejections(final String policy)
    {
        return appeals.falseRejections(policy);
    }

    /** The policies any appeal was applied against. */
    public synchronized List<String> appealedPolicies()
    {
        return appeals.appealedPolicies();
    }

    /** Version of the whole set: bumped by every change. */
    public synchronized long setVersion()
    {
        return catalogue.setVersion();
    }

    /** The set in force, each policy with its version, owner and reason. */
    public synchronized PolicySet inForce()
    {
        return catalogue.inForce();
    }

    /** The version in force of one policy, or null. */
    public synchronized Policy current(final String id)
    {
        return catalogue.current(id);
    }

    /** The ordinals an id holds (enforced, shadow), those assigned; empty when none. */
    public synchronized int[] ordinalsOf(final String id)
    {
        return catalogue.ordinalsOf(id);
    }

    /** The policy behind a bucket key: version {@code version} of whatever holds {@code ordinal}, or null. */
    public synchronized Policy policyAt(final int ordinal, final long version)
    {
        return catalogue.policyAt(ordinal, version);
    }

    /** Every version of one policy, oldest first, or null when the id was never used. */
    public synchronized PolicyHistory history(final String id)
    {
        return catalogue.history(id);
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

    /**
     * Each owner writes its own fields; protobuf writes them in field-number order, so the bytes do
     * not depend on which owner writes first.
     */
    private PolicyStateSnapshot snapshot(final boolean withAudit)
    {
        final PolicyStateSnapshot.Builder out = PolicyStateSnapshot.newBuilder().setClock(clock.now());
        catalogue.writeTo(out);
        exemptions.writeTo(out);
        if (withAudit)
        {
            audit.writeTo(out);
        }
        regionShares.writeTo(out);
        appeals.writeTo(out);
        return out.build();
    }

    public void restore(final PolicyStateSnapshot snapshot)
    {
        synchronized (this)
        {
            restoreQuietly(snapshot, true);
            exemptions.compile();
            catalogue.publish();
        }
        listeners.forEach(Runnable::run);
        regionSharesListeners.forEach(Runnable::run);
    }

    /** @param withAudit false: the audit trail stays as it is (the snapshot has none) */
    private void restoreQuietly(final PolicyStateSnapshot snapshot, final boolean withAudit)
    {
        catalogue.restoreFrom(snapshot);
        exemptions.restoreFrom(snapshot);
        regionShares.restoreFrom(snapshot);
        appeals.restoreFrom(snapshot);
        clock.restore(snapshot.getClock());
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
            .setAt(Timestamp.newBuilder().setSeconds(Math.floorDiv(wallMillis, 1000))
                .setNanos((int)Math.floorMod(wallMillis, 1000) * 1_000_000));
    }
}
