package dev.limiter.client;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;

/**
 * The last stage of every call: the circuit of the call's Raft group decides whether the cluster is
 * asked at all (during an outage's recovery ramp, while the circuit is open, or as its half-open
 * probe), then the call goes to the leader of its shard, with its deadline registered with the
 * deadline timer. A call no node can take is failed on the delivery thread, where its fallback may
 * decide it locally.
 */
final class ClusterPath implements CallPath
{
    private final ShardRouter router;
    private final Circuit circuit;
    private final ConnectionSet connections;
    private final DeadlineTimer deadlines;
    private final Delivery delivery;
    private final BlockingWait blockingWait;
    private final BooleanSupplier closed;

    ClusterPath(final ShardRouter router, final Circuit circuit, final ConnectionSet connections,
        final DeadlineTimer deadlines, final Delivery delivery, final BlockingWait blockingWait,
        final BooleanSupplier closed)
    {
        this.router = router;
        this.circuit = circuit;
        this.connections = connections;
        this.deadlines = deadlines;
        this.delivery = delivery;
        this.blockingWait = blockingWait;
        this.closed = closed;
    }

    @Override
    public CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost, final int wireCost,
        final long deadlineNanos)
    {
        return send(descriptor, cost, wireCost, deadlineNanos, false);
    }

    @Override
    public Decision acquireBlocking(final Descriptor descriptor, final int cost, final int wireCost,
        final long deadlineNanos)
    {
        return blockingWait.await(send(descriptor, cost, wireCost, deadlineNanos, true));
    }

    private CompletableFuture<Decision> send(final Descriptor descriptor, final int cost, final int wireCost,
        final long deadlineNanos, final boolean blocking)
    {
        Objects.requireNonNull(descriptor, "descriptor");
        final long now = System.nanoTime();
        final int shard = router.shardFor(descriptor);
        final int lane = router.laneOf(shard);
        final Decision ramped = circuit.ramped(lane, descriptor, cost);
        if (ramped != null)
        {
            return delivery.later(ramped);
        }
        boolean probe = false;
        final long openUntil = circuit.openUntilNanos(lane);
        if (openUntil != 0)
        {
            // Open: decided here at once. Half-open (past the probe time): one call at a time tries
            // the cluster, so a group still dead holds up one caller per probe, not all of them.
            probe = circuit.takeProbe(lane, openUntil);
            if (!probe)
            {
                final Decision decided = circuit.decideOpen(descriptor, cost);
                if (decided != null)
                {
                    return delivery.later(decided);
                }
            }
        }
        final PendingCall call = new PendingCall(descriptor, cost, now + deadlineNanos, circuit);
        call.probe = probe;
        call.lane = lane;
        call.blocking = blocking; // before it is sent: the answer may come back at once
        call.wireCost = wireCost;
        if (closed.getAsBoolean())
        {
            call.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
            return call;
        }
        deadlines.add(call);
        final Connection connection = connections.pick(router.leaderOfShard(shard));
        if (connection == null)
        {
            delivery.fail(call, connections.noneOpen());
            return call;
        }
        connection.submit(call);
        return call;
    }

    /**
     * A token block asked for in the background (its tokens are for later calls): straight to the
     * cluster, never decided here (no fallback, no circuit), and not while its group's circuit is open.
     */
    CompletableFuture<Decision> askForBlock(final Descriptor descriptor, final int block, final long deadlineNanos)
    {
        final PendingCall call = new PendingCall(descriptor, block, System.nanoTime() + deadlineNanos);
        final int shard = router.shardFor(descriptor);
        final Connection connection = closed.getAsBoolean() || circuit.openUntilNanos(router.laneOf(shard)) != 0
            ? null :
            connections.pick(router.leaderOfShard(shard));
        if (connection == null)
        {
            call.completeExceptionally(new LimiterUnavailableException("no block now"));
            return call;
        }
        deadlines.add(call);
        connection.submit(call);
        return call;
    }
}
