package dev.limiter.protocol;

/**
 * A reusable holder for one request's outcome against one key's limit, written by
 * {@link Admission#decide} (and by a table for the outcomes it decides itself: no room, a release).
 */
public final class Verdict
{
    private boolean allowed;
    private ReasonCode reason;
    private long remainingTokens;
    private long retryAfterNanos;
    private long resetAfterNanos;
    private long timeNanos;

    /** Sets the key's time the outcome was decided at ({@link #timeNanos()}). */
    public void timeNanos(final long nanos)
    {
        this.timeNanos = nanos;
    }

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

    /** Sets every field but the time. */
    public void set(final boolean allowed, final ReasonCode reason, final long remainingTokens,
        final long retryAfterNanos,
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
