package dev.limiter.client;

import java.util.concurrent.CompletableFuture;

/**
 * Decides a call from this SDK's block of its key's tokens when it holds one ({@link TokenBlocks}):
 * on the caller's thread, with no round trip and nothing allocated. A blocking call whose key's
 * demand here calls for a block asks the cluster for one, and the answer serves the call too.
 * Present only when the client follows policies. Checks (cost 0) always go to the cluster.
 */
final class TokenBlockStage implements CallPath
{
    private final TokenBlocks blocks;
    private final Circuit circuit;
    private final ShardRouter router;
    private final Delivery delivery;
    private final CallPath next;

    TokenBlockStage(final TokenBlocks blocks, final Circuit circuit, final ShardRouter router, final Delivery delivery,
        final CallPath next)
    {
        this.blocks = blocks;
        this.circuit = circuit;
        this.router = router;
        this.delivery = delivery;
        this.next = next;
    }

    @Override
    public CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost, final int wireCost,
        final long deadlineNanos)
    {
        final Decision local = cost > 0 ? blocks.tryLocal(descriptor, cost) : null;
        return local != null ? delivery.later(local) : next.acquire(descriptor, cost, wireCost, deadlineNanos);
    }

    @Override
    public Decision acquireBlocking(final Descriptor descriptor, final int cost, final int wireCost,
        final long deadlineNanos)
    {
        if (cost == 0)
        {
            return next.acquireBlocking(descriptor, cost, wireCost, deadlineNanos);
        }
        final Decision local = blocks.tryLocal(descriptor, cost);
        if (local != null)
        {
            return local;
        }
        // No block is asked for while the call's circuit is open: its answer would be decided here.
        final int ask = circuitClosedFor(descriptor) ? blocks.toAsk(descriptor, cost) : cost;
        if (ask > cost)
        {
            final long askedAt = blocks.now();
            final Decision answer;
            try
            {
                answer = next.acquireBlocking(descriptor, cost, ask, deadlineNanos);
            }
            catch (final RuntimeException e)
            {
                blocks.granted(descriptor, cost, ask, askedAt, null);
                throw e;
            }
            if (blocks.granted(descriptor, cost, ask, askedAt, answer))
            {
                return answer;
            }
            // The bucket had less than a block: this call asks for its own cost, like any other.
        }
        return next.acquireBlocking(descriptor, cost, cost, deadlineNanos);
    }

    private boolean circuitClosedFor(final Descriptor descriptor)
    {
        return circuit.openLanes() == 0 || circuit.openUntilNanos(router.laneOf(router.shardFor(descriptor))) == 0;
    }
}
