package dev.limiter.client;

import java.util.concurrent.CompletableFuture;

/**
 * The path an acquire takes to its decision. The client builds it once, as a chain: the optional
 * stages that may decide a call here ({@link TokenBlockStage}, {@link FastRejectionStage}), each
 * present only when its feature is on, then {@link ClusterPath}, which asks the cluster. Async and
 * blocking calls take the same chain.
 */
interface CallPath
{
    /**
     * An async call.
     *
     * @param cost          tokens the caller needs (0 for a check): what a local decision charges
     * @param wireCost      tokens asked of the node: the cost, or an SDK token block (more than the cost)
     * @param deadlineNanos how long the call may wait for a node, ns
     * @return completes with the decision, or exceptionally with a {@link LimiterException}
     */
    CompletableFuture<Decision> acquire(Descriptor descriptor, int cost, int wireCost, long deadlineNanos);

    /**
     * A blocking call, with the same parameters: returns by the deadline plus a little slack. A
     * reserved decision's wait ({@link Decision#waitNanos()}) is left to the caller.
     *
     * @throws LimiterException when no decision can be had
     */
    Decision acquireBlocking(Descriptor descriptor, int cost, int wireCost, long deadlineNanos);
}
