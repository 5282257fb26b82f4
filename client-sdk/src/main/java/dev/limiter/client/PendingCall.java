package dev.limiter.client;

import java.util.concurrent.CompletableFuture;

/** One acquire in flight: it is its own future, so a call allocates one object plus its Decision. */
final class PendingCall extends CompletableFuture<Decision>
{
    final Descriptor descriptor;
    final int cost;
    final long deadlineNanos;

    PendingCall(final Descriptor descriptor, final int cost, final long deadlineNanos)
    {
        this.descriptor = descriptor;
        this.cost = cost;
        this.deadlineNanos = deadlineNanos;
    }
}
