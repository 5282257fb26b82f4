package dev.limiter.raft;

import java.util.concurrent.CompletableFuture;

/**
 * What a group's application does around a transfer of the lead that this node asks for on purpose
 * (to spread leaders), as opposed to a failover: Ratis refuses new entries while a transfer is under
 * way, so whatever the leader answered and has not logged yet must reach the log before it asks.
 * Both methods are called on the node's rebalancing thread: {@code prepare} returns at once and
 * finishes asynchronously.
 */
public interface PlannedHandOver
{
    /** Hands the lead over at once (nothing to prepare) and is told nothing of the outcome. */
    PlannedHandOver NONE = new PlannedHandOver()
    {
        @Override
        public CompletableFuture<Void> prepare()
        {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void ended(final boolean moved)
        {
        }
    };

    /**
     * Stops acting as leader and gets what it answered into the log; the transfer is asked for only
     * once the returned stage completes normally (and not at all if it fails or takes longer than
     * {@link RaftGroupMember#HAND_OVER_PREPARE_MILLIS}).
     */
    CompletableFuture<Void> prepare();

    /**
     * The hand-over is over, whether or not it was asked for: {@code moved} when another member now
     * leads the group, else this node still leads and may act as leader again (once {@code prepare}
     * was called, {@code ended} is called exactly once).
     */
    void ended(boolean moved);
}
