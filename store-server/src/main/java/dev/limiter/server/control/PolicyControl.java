package dev.limiter.server.control;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.raft.NotLeaderException;

import java.util.concurrent.CompletableFuture;

/**
 * Where admin changes enter: on a single node they apply at once; in a cluster the leader checks
 * them against its state (so a bad change is refused without touching the log) and appends them,
 * answering once the entry is committed and applied here. A follower refuses with
 * {@link NotLeaderException} naming the leader.
 */
public final class PolicyControl
{
    private final PolicyState state;
    private final PolicyLog log;
    private final int shards;

    /**
     * @param log null on a single node
     */
    public PolicyControl(final PolicyState state, final PolicyLog log)
    {
        this(state, log, 1);
    }

    /**
     * @param log    null on a single node
     * @param shards the node's shard count: a stacked budget that cannot be split into that many
     *               shares is refused here ({@link #stackedProblem})
     */
    public PolicyControl(final PolicyState state, final PolicyLog log, final int shards)
    {
        this.state = state;
        this.log = log;
        this.shards = shards;
    }

    /**
     * The one statement of how stacked (hierarchical) policies run on a node with {@code shards}
     * shards. A request's own budget and its stacked ones are checked and charged, all or none, by
     * one shard: the shard of the request's own bucket. TENANT and PRINCIPAL budgets live on the
     * tenant's shard; a stacked GLOBAL or CLIENT_IP budget is split into one equal share per shard
     * ({@link CompiledPolicy#splitsAcrossShards}), so its burst must allow at least one token per
     * share; so must a GLOBAL policy with {@code splitAcrossShards}. Null when the policy may run.
     */
    public static String stackedProblem(final Policy policy, final int shards)
    {
        if (shards <= 1 || !CompiledPolicy.splitsAcrossShards(policy))
        {
            return null;
        }
        final Limit[] limits;
        try
        {
            limits = PolicySetIndex.limitsOf(policy);
        }
        catch (final IllegalArgumentException e)
        {
            return null; // not a valid rate at all: the policy's own validation says so, field by field
        }
        for (int k = 0; k < limits.length; k++)
        {
            try
            {
                CompiledPolicy.shares(limits[k], shards); // every limit of it is split alike
            }
            catch (final IllegalArgumentException e)
            {
                return (policy.getStacked() ? "stacked policy '" + policy.getId() + "' is " + CompiledPolicy.effectiveScope(policy) +
                    "-scoped" : "policy '" + policy.getId() + "' has splitAcrossShards") + ": on a node with " +
                    shards + " shards its budget is split into " + shards + " equal shares, one per shard, and " +
                    (k == 0 ? "" : "in its limits[" + (k - 1) + "] ") + e.getMessage() + " (or run the nodes with fewer shards)";
            }
        }
        return null;
    }

    /**
     * Why a request whose own policy has {@code ownScope} cannot also be charged against the
     * stacked policy {@code partId} of {@code partScope} on a node with {@code shards} shards (the
     * two buckets live on different shards), or null.
     */
    public static String stackedOwnScopeProblem(final String ownPolicyId, final Scope ownScope, final String partId,
        final Scope partScope, final int shards)
    {
        if (shards <= 1 || tenantScoped(ownScope) || !tenantScoped(partScope))
        {
            return null;
        }
        return "policy '" + ownPolicyId + "' is " + ownScope + "-scoped and stacked policy '" + partId + "' is " + partScope +
            "-scoped: on a node with " + shards + " shards their buckets live on different shards, so no request can be charged " +
            "against both; give such requests a TENANT- or PRINCIPAL-scoped policy of their own, or run the nodes with --shards 1";
    }

    private static boolean tenantScoped(final Scope scope)
    {
        return scope == Scope.SCOPE_UNSPECIFIED || scope == Scope.TENANT || scope == Scope.PRINCIPAL;
    }

    /** Why this node cannot take the change, or null. */
    private String unsupported(final PolicyCommand command)
    {
        Policy wanted = command.hasPut() ? command.getPut() : null;
        if (command.hasRollback())
        {
            final PolicyHistory history = state.history(command.getRollback().getId());
            final long to = command.getRollback().getToVersion();
            wanted = history != null && to >= 1 && to <= history.getVersionsCount() ? history.getVersions((int)to - 1).getPolicy() : null;
        }
        if (wanted == null || !CompiledPolicy.splitsAcrossShards(wanted))
        {
            return null;
        }
        final String problem = stackedProblem(wanted, shards);
        return problem == null ? null : (wanted.getStacked() ? "policy.stacked: " : "policy.splitAcrossShards: ") + problem;
    }

    public PolicyState state()
    {
        return state;
    }

    /** Completes with what the change did (or why it did nothing); fails with NotLeaderException off the leader. */
    public CompletableFuture<PolicyState.Outcome> submit(final PolicyCommand command)
    {
        final String unsupported = unsupported(command);
        if (unsupported != null)
        {
            return CompletableFuture.completedFuture(new PolicyState.Outcome(PolicyState.Status.INVALID, null,
                AdminError.newBuilder().setError("nothing changed").addErrors(unsupported).build()));
        }
        if (log == null)
        {
            return CompletableFuture.completedFuture(state.apply(command));
        }
        if (!log.isLeader())
        {
            return CompletableFuture.failedFuture(log.notLeader());
        }
        final PolicyState.Outcome checked = state.check(command);
        if (checked.status() != PolicyState.Status.OK)
        {
            return CompletableFuture.completedFuture(checked);
        }
        return log.append(command).thenApply(PolicyState.Outcome::decode);
    }
}
