package dev.limiter.server.control;

import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.raft.NotLeaderException;
import dev.limiter.server.cluster.ReplicatedBuckets;
import dev.limiter.server.cluster.Replication;

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
    private final Replication replication;

    /**
     * @param replication null on a single node
     */
    public PolicyControl(final PolicyState state, final Replication replication)
    {
        this.state = state;
        this.replication = replication;
    }

    public PolicyState state()
    {
        return state;
    }

    /** Completes with what the change did (or why it did nothing); fails with NotLeaderException off the leader. */
    public CompletableFuture<PolicyState.Outcome> submit(final PolicyCommand command)
    {
        if (replication == null)
        {
            return CompletableFuture.completedFuture(state.apply(command));
        }
        if (!replication.isLeader())
        {
            return CompletableFuture.failedFuture(new NotLeaderException(replication.node().nodeId(), replication.leaderId()));
        }
        final PolicyState.Outcome checked = state.check(command);
        if (checked.status() != PolicyState.Status.OK)
        {
            return CompletableFuture.completedFuture(checked);
        }
        return replication.append(ReplicatedBuckets.policyEntry(command)).thenApply(PolicyState.Outcome::decode);
    }
}
