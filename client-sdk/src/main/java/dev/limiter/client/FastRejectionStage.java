package dev.limiter.client;

import java.util.concurrent.CompletableFuture;

/**
 * Refuses here, without a round trip, a descriptor the cluster refused with "retry after T" until T
 * ({@link LocalRejections}). Present only with {@link LimiterClient.Builder#fastLocalRejection}.
 */
final class FastRejectionStage implements CallPath
{
    private final LocalRejections rejections;
    private final Delivery delivery;
    private final CallPath next;

    FastRejectionStage(final LocalRejections rejections, final Delivery delivery, final CallPath next)
    {
        this.rejections = rejections;
        this.delivery = delivery;
        this.next = next;
    }

    @Override
    public CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost, final int wireCost,
        final long deadlineNanos)
    {
        final Decision known = rejections.stillDenied(descriptor, cost, System.nanoTime());
        return known != null ? delivery.later(known) : next.acquire(descriptor, cost, wireCost, deadlineNanos);
    }

    @Override
    public Decision acquireBlocking(final Descriptor descriptor, final int cost, final int wireCost,
        final long deadlineNanos)
    {
        final Decision known = rejections.stillDenied(descriptor, cost, System.nanoTime());
        return known != null ? known : next.acquireBlocking(descriptor, cost, wireCost, deadlineNanos);
    }
}
