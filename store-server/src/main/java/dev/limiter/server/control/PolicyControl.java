package dev.limiter.server.control;

import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyHistory;
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
     * The one statement of a limit of this version: stacked (hierarchical) policies charge all their
     * budgets atomically on one shard, so they need nodes with one shard. Null when {@code shards} is 1.
     */
    public static String stackedNeedsOneShard(final int shards)
    {
        return shards > 1 ? "hierarchical (stacked) policies need nodes with one shard (--shards 1) in this version; " +
            "this node has " + shards : null;
    }

    /** Why this node cannot take the change, or null. */
    private String unsupported(final PolicyCommand command)
    {
        boolean stacked = command.hasPut() && command.getPut().getStacked();
        if (command.hasRollback())
        {
            final PolicyHistory history = state.history(command.getRollback().getId());
            final long to = command.getRollback().getToVersion();
            stacked = history != null && to >= 1 && to <= history.getVersionsCount() &&
                history.getVersions((int)to - 1).getPolicy().getStacked();
        }
        return stacked && shards > 1 ? "policy.stacked: " + stackedNeedsOneShard(shards) : null;
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
