package dev.limiter.client;

import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * Sends again the calls a node refused without deciding them, within their deadlines and by the
 * client's {@link Backoff}: to the leader a NOT_LEADER answer named, at once; after a wait when no
 * member leads or the node was OVERLOADED. A call whose next try would come after its deadline is
 * left to the deadline timer, and ends as a timeout, as a call no node answered.
 */
final class Resender implements Connection.Refusals
{
    private static final String NO_LEADER_IN_TIME = "no leader answered within the call's deadline";

    private final ConnectionSet connections;
    private final ShardRouter router;
    private final Backoff backoff;
    private final BooleanSupplier closed;
    /** Calls waiting out a backoff. */
    private final DelayedRetries<PendingCall> waiting;
    private final LongAdder redirectedFrames = new LongAdder();
    private final LongAdder overloadedFrames = new LongAdder();

    Resender(final ConnectionSet connections, final ShardRouter router, final Backoff backoff,
        final BooleanSupplier closed)
    {
        this.connections = connections;
        this.router = router;
        this.backoff = backoff;
        this.closed = closed;
        this.waiting = new DelayedRetries<>(closed);
    }

    @Override
    public void notLeader(final Connection from, final PendingCall[] calls, final String leaderHint)
    {
        redirectedFrames.increment();
        final boolean known = connections.followLeaderHint(from, leaderHint);
        if (router.routes())
        {
            from.requestShardMap(); // leadership moved: the refusing node knows where to
        }
        for (final PendingCall call : calls)
        {
            if (call.isDone())
            {
                continue;
            }
            if (known)
            {
                resubmit(call, leaderHint, NO_LEADER_IN_TIME);
            }
            else
            {
                sendLater(from, call, backoff.delayNanos(Backoff.Reason.NO_LEADER, call.noLeaderTries++),
                    NO_LEADER_IN_TIME);
            }
        }
    }

    @Override
    public void overloaded(final Connection from, final PendingCall[] calls, final String why)
    {
        overloadedFrames.increment();
        final String timeout = "the cluster was overloaded until the call's deadline (" + why + ")";
        final long now = System.nanoTime();
        for (final PendingCall call : calls)
        {
            if (call.isDone())
            {
                continue;
            }
            final long delay = backoff.delayNanos(Backoff.Reason.OVERLOADED, call.overloadedTries++);
            if (Backoff.fitsBefore(call.deadlineNanos, now, delay))
            {
                sendLater(from, call, delay, timeout);
            }
            // else not sent again: the deadline timer ends it (off this I/O thread, like any call due).
        }
    }

    /** Sends {@code call} again after {@code delayNanos}, on {@code from}'s I/O thread. */
    private void sendLater(final Connection from, final PendingCall call, final long delayNanos,
        final String whyOutOfTime)
    {
        waiting.later(from.loop(), call, delayNanos, due -> resubmit(due, "", whyOutOfTime));
    }

    /** Sends a refused call again: to {@code leaderHint} when it is open, else where it would go now. */
    private void resubmit(final PendingCall call, final String leaderHint, final String whyOutOfTime)
    {
        if (call.isDone())
        {
            return;
        }
        if (call.deadlineNanos - System.nanoTime() <= 0)
        {
            call.completeExceptionally(new LimiterTimeoutException(whyOutOfTime));
            return;
        }
        final boolean isClosed = closed.getAsBoolean();
        final Connection hinted = isClosed ? null : connections.open(leaderHint);
        final Connection connection = isClosed ? null : hinted != null ? hinted
            : connections.pick(router.leaderFor(call.descriptor));
        if (connection == null)
        {
            call.completeExceptionally(new LimiterUnavailableException("no open connection to any limiter node "
                + connections.endpoints()));
            return;
        }
        connection.submit(call);
    }

    /** Frames a node answered NOT_LEADER (their calls were sent on). */
    long redirectedFrames()
    {
        return redirectedFrames.sum();
    }

    /** Frames a node answered OVERLOADED (their calls were sent again after a backoff, within their deadlines). */
    long overloadedFrames()
    {
        return overloadedFrames.sum();
    }

    /** Fails the calls still waiting out a backoff: the client is closed. */
    void close()
    {
        waiting.close();
    }
}
