package dev.limiter.server.table;

import dev.limiter.protocol.ReasonCode;

/** A reusable holder for one decision's outcome, written by {@link BucketTable#acquire}. */
public final class Verdict
{
    boolean allowed;
    ReasonCode reason;
    long remainingTokens;
    long retryAfterNanos;
    long resetAfterNanos;
    long timeNanos;

    public boolean allowed()
    {
        return allowed;
    }

    public ReasonCode reason()
    {
        return reason;
    }

    /** Whole tokens left after this decision. */
    public long remainingTokens()
    {
        return remainingTokens;
    }

    /** Exact nanoseconds until {@code cost} tokens exist; 0 when allowed; -1 when never. */
    public long retryAfterNanos()
    {
        return retryAfterNanos;
    }

    /** Exact nanoseconds until the bucket is full again. */
    public long resetAfterNanos()
    {
        return resetAfterNanos;
    }

    /**
     * The key's time the decision was made at (the cluster time, or the key's own if that was
     * later): the id of a lease it granted.
     */
    public long timeNanos()
    {
        return timeNanos;
    }

    void set(final boolean allowed, final ReasonCode reason, final long remainingTokens, final long retryAfterNanos,
        final long resetAfterNanos)
    {
        this.allowed = allowed;
        this.reason = reason;
        this.remainingTokens = remainingTokens;
        this.retryAfterNanos = retryAfterNanos;
        this.resetAfterNanos = resetAfterNanos;
    }

    @Override
    public String toString()
    {
        return "Verdict{" + (allowed ? "allowed" : "denied") + ", " + reason + ", remaining=" + remainingTokens +
            ", retryAfterNs=" + retryAfterNanos + ", resetAfterNs=" + resetAfterNanos + '}';
    }
}
