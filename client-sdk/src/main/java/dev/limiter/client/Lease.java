package dev.limiter.client;

import dev.limiter.protocol.LeaseToken;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The outcome of {@link LimiterClient#acquireLease}: a decision and, when a concurrency limit
 * ({@code maxConcurrent}) granted it, the lease it holds until {@link #close()}.
 *
 * <pre>{@code
 * try (Lease lease = limiter.acquireLease(Descriptor.of("acme", "/v1/exports"))) {
 *     if (!lease.granted()) { respond 429 with RateLimitHeaders.of(lease.decision()) }
 *     else { run the export }
 * }   // the lease goes back here
 * }</pre>
 *
 * A lease not given back (the process died) still counts until it expires: between the policy's
 * {@code leaseTtl} and 4/3 of it after the grant. Thread-safe; releases at most once.
 */
public final class Lease implements AutoCloseable
{
    private final LimiterClient client;
    private final Decision decision;
    private final LeaseToken token;
    private final String leaderHint;
    private final AtomicBoolean released = new AtomicBoolean();

    Lease(final LimiterClient client, final Decision decision, final byte[] encodedFields, final int cost, final String leaderHint)
    {
        this.client = client;
        this.decision = decision;
        this.token = decision.holdsLease() ? new LeaseToken(decision.leaseId(), decision.leaseCheck(), cost, encodedFields) : null;
        this.leaderHint = leaderHint;
    }

    /** Whether the request may go ahead. */
    public boolean granted()
    {
        return decision.allowed();
    }

    /** The decision (a denial's retry-after, the policy, whether the SDK decided it locally). */
    public Decision decision()
    {
        return decision;
    }

    /**
     * Whether a lease is held: granted by a concurrency limit and not released yet. A grant of a
     * rate limit, a local decision ({@link Decision#degraded()}) and an exemption hold none.
     */
    public boolean held()
    {
        return token != null && !released.get();
    }

    /**
     * The lease as a printable id ({@code L1.…}) that {@link LimiterClient#release(String)} or
     * {@code ./limiter release --lease ID} gives back from anywhere; null when no lease is held.
     */
    public String id()
    {
        return token == null ? null : token.encode();
    }

    /**
     * Gives the lease back (once; later calls, and leases never held, complete at once).
     *
     * @return completes when a node has applied the release, or exceptionally with a
     * {@link LimiterException} (the lease then counts until it expires)
     */
    public CompletableFuture<Void> releaseAsync()
    {
        if (token == null || !released.compareAndSet(false, true))
        {
            return CompletableFuture.completedFuture(null);
        }
        return client.release(token, leaderHint);
    }

    /**
     * Gives the lease back and waits for the node's answer, at most the client's deadline (plus
     * the same slack as {@link LimiterClient#acquireBlocking}). Never throws: a release that fails
     * is logged and counted ({@link LimiterClient#leaseReleaseFailures()}), and the lease expires
     * after its TTL.
     */
    @Override
    public void close()
    {
        final CompletableFuture<Void> release = releaseAsync();
        if (release.isDone() && !release.isCompletedExceptionally())
        {
            return;
        }
        try
        {
            release.get(client.deadlineNanos() + TimeUnit.MILLISECONDS.toNanos(LimiterClient.BLOCKING_SLACK_MILLIS), TimeUnit.NANOSECONDS);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            client.releaseFailed(token, e);
        }
        catch (final ExecutionException | TimeoutException e)
        {
            client.releaseFailed(token, e instanceof ExecutionException ? e.getCause() : e);
        }
    }

    @Override
    public String toString()
    {
        return "Lease{" + (token == null ? "none" : token.encode()) + (released.get() ? ", released" : "") + ", " + decision + '}';
    }
}
