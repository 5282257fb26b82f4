package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.LeaseToken;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ReleaseCodec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * Gives concurrency leases back (RELEASE): to the node that granted the lease, following NOT_LEADER
 * answers to the leader they name, and waiting out an election by the client's {@link Backoff},
 * for at most {@link Backoff#RELEASE_ATTEMPTS} tries within the deadline. A release that fails is
 * logged and counted; its lease counts against its limit until it expires.
 */
final class Releases
{
    private static final Logger LOG = LoggerFactory.getLogger(Releases.class);

    private final ConnectionSet connections;
    private final Backoff backoff;
    private final Runnable refreshShardMap;
    private final BooleanSupplier closed;
    private final LongAdder failures = new LongAdder();
    /** Releases waiting out a backoff. */
    private final DelayedRetries<CompletableFuture<Void>> waiting;

    Releases(final ConnectionSet connections, final Backoff backoff, final Runnable refreshShardMap,
        final BooleanSupplier closed)
    {
        this.connections = connections;
        this.backoff = backoff;
        this.refreshShardMap = refreshShardMap;
        this.closed = closed;
        this.waiting = new DelayedRetries<>(closed);
    }

    /**
     * @param leaderHint {@code host:port} of the node that granted the lease, or "" for any
     * @return completes when a node applied the release, or exceptionally with a {@link LimiterException}
     */
    CompletableFuture<Void> release(final LeaseToken lease, final String leaderHint, final long deadlineNanos)
    {
        final CompletableFuture<Void> done = new CompletableFuture<>();
        if (closed.getAsBoolean())
        {
            done.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
            return done;
        }
        final byte[] body = ReleaseCodec.body(lease.leaseId(), lease.check(), lease.cost(), lease.encodedFields());
        send(body, leaderHint, System.nanoTime() + deadlineNanos, 0, done);
        return done;
    }

    private void send(final byte[] body, final String target, final long deadline, final int attempt,
        final CompletableFuture<Void> done)
    {
        final Connection connection = connections.pick(target);
        if (connection == null)
        {
            done.completeExceptionally(new LimiterUnavailableException("no open connection to any limiter node "
                + connections.endpoints() +
                " to release a lease (it counts until it expires)"));
            return;
        }
        connection.request(MessageType.RELEASE, body, deadline).whenComplete((ok, failure) ->
        {
            if (failure == null)
            {
                done.complete(null);
                return;
            }
            final long now = System.nanoTime();
            if (!(failure instanceof LimiterRequestException refused) || refused.code() != ErrorCode.NOT_LEADER ||
                attempt + 1 >= Backoff.RELEASE_ATTEMPTS || deadline - now <= 0)
            {
                done.completeExceptionally(failure);
                return;
            }
            refreshShardMap.run();
            final String named = refused.detail();
            if (named != null && !named.isEmpty() && !named.equals(connection.hostPort()))
            {
                send(body, named, deadline, attempt + 1, done); // the leader's address, as the node named it
                return;
            }
            final long delay = backoff.delayNanos(Backoff.Reason.NO_LEADER, attempt);
            if (!Backoff.fitsBefore(deadline, now, delay))
            {
                done.completeExceptionally(failure);
                return;
            }
            waiting.later(connection.loop(), done, delay, due -> send(body, "", deadline, attempt + 1, due));
        });
    }

    /** A lease's release failed: it counts until it expires. */
    void failed(final LeaseToken lease, final Throwable cause)
    {
        failures.increment();
        LOG.warn("could not release lease {} (it counts against its limit until it expires): {}", lease.encode(),
            cause.toString());
    }

    /** Fails the releases still waiting out a backoff: the client is closed (their leases count until they expire). */
    void close()
    {
        waiting.close();
    }

    long failures()
    {
        return failures.sum();
    }
}
