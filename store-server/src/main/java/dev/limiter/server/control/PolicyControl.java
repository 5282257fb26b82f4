package dev.limiter.server.control;

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
     * @param shards the node's shard count: stacked (hierarchical) policies need one shard in this
     *               version, so with more they are refused here
     */
    public PolicyControl(final PolicyState state, final PolicyLog log, final int shards)
    {
        this.state = state;
        this.log = log;
        this.shards = shards;
    }

    /**
     * The one statement of where stacked (hierarchical) policies can run. A request's own budget and
     * its stacked ones are checked and charged, all or none, by one shard; each bucket must also
     * always live on the same shard. Tenant and principal buckets live on the tenant's shard, so on
     * a node with several shards a stacked policy must be TENANT- or PRINCIPAL-scoped (and, per
     * request, so must the request's own policy: {@link #stackedOwnScopeProblem}). Null when it may run.
     *
     * @param scope the stacked policy's scope as written (unspecified means TENANT)
     */
    public static String stackedScopeProblem(final String policyId, final Scope scope, final int shards)
    {
        if (shards <= 1 || tenantScoped(scope))
        {
            return null;
        }
        return "stacked policy '" + policyId + "' is " + scope + "-scoped: on a node with " + shards + " shards a stacked " +
            "policy must be TENANT- or PRINCIPAL-scoped (its buckets then share the tenant's shard with the request's own), " +
            "or run the nodes with --shards 1";
    }

    /**
     * Why a request whose own policy has {@code ownScope} cannot also be charged against stacked
     * policies on a node with {@code shards} shards (its own bucket lives on another shard than the
     * tenant's), or null.
     */
    public static String stackedOwnScopeProblem(final String ownPolicyId, final Scope ownScope, final int shards)
    {
        if (shards <= 1 || tenantScoped(ownScope))
        {
            return null;
        }
        return "policy '" + ownPolicyId + "' is " + ownScope + "-scoped and stacked policies match the request too: on a node " +
            "with " + shards + " shards a request charged against stacked policies must have a TENANT- or PRINCIPAL-scoped " +
            "policy of its own, or run the nodes with --shards 1";
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
        if (wanted == null || !wanted.getStacked())
        {
            return null;
        }
        final String problem = stackedScopeProblem(wanted.getId(), wanted.getScope(), shards);
        return problem == null ? null : "policy.stacked: " + problem;
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
