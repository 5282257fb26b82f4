package dev.limiter.protocol;

/**
 * A compiled limit of one key: the algorithm's arithmetic as pure functions on a key's stored
 * state, shared by the server's table, its replicas and the SDK so that all agree to the last
 * token. Immutable.
 *
 * <p>A key's state is two longs: {@code state}, whose meaning is the algorithm's (a token bucket's
 * content, a window's remaining count, two windows' counts), and the time it was last changed. A
 * key never seen is in {@link #fullState()}, and a stored key whose state has come back to it
 * (refilled, or its windows have passed) may be forgotten: it decides the same as an absent one.
 *
 * <p>Time: callers pass the key's effective time, never earlier than the time stored with its
 * state (elapsed time is clamped at zero). Token buckets run on the cluster's monotonic clock;
 * windows ({@link #wallClock()}) on its UTC wall time in nanoseconds since the epoch, so that a
 * day's window ends at midnight UTC.
 *
 * <p>Amounts are in units: a token is {@link #unitsPerToken()} units (1 for the windows), so a
 * token bucket's refill stays exact.
 */
public abstract class Limit
{
    /** Whether decisions of this limit run on the cluster's UTC wall time (aligned windows), not its monotonic clock. */
    public boolean wallClock()
    {
        return false;
    }

    /** Units one token is worth. */
    public abstract long unitsPerToken();

    /** Most tokens a key may hold or take at once: a bucket's capacity, a window's limit. */
    public abstract long burstTokens();

    /** {@link #burstTokens()} in units. */
    public long burstUnits()
    {
        return burstTokens() * unitsPerToken();
    }

    /** Units for a cost in tokens; callers check {@code cost <= burstTokens()} first. */
    public long costUnits(final long costTokens)
    {
        return costTokens * unitsPerToken();
    }

    /** Whole tokens in {@code units} (rounded down). */
    public long wholeTokens(final long units)
    {
        return units / unitsPerToken();
    }

    /**
     * Units a key may take beyond what is {@link #available} (a soft overage): grants that need
     * them are answered {@link ReasonCode#SOFT_OVERAGE}. 0 unless the policy allows an overage.
     */
    public long overageUnits()
    {
        return 0;
    }

    /**
     * Longest a request may be asked to wait for tokens reserved for it (a WAIT policy): one that
     * would have its tokens within this time is charged now and answered
     * {@link ReasonCode#RESERVED}. 0 unless the policy waits.
     */
    public long maxWaitNanos()
    {
        return 0;
    }

    /**
     * Whether a grant of this limit takes a lease the caller gives back ({@link #release}): a
     * concurrency limit. A lease is named by a random id the node keeps a record of, with the time
     * of its grant and its cost.
     */
    public boolean leases()
    {
        return false;
    }

    /**
     * The state after giving back {@code costUnits} of a lease granted at {@code grantNanos}
     * (state refilled to {@code nowNanos}); unchanged when that lease has expired, and for limits
     * that take no leases.
     */
    public long release(final long state, final long nowNanos, final long grantNanos, final long costUnits)
    {
        return state;
    }

    /** Whether a lease granted at {@code grantNanos} no longer counts at {@code nowNanos} (always, for limits that take none). */
    public boolean leaseExpired(final long grantNanos, final long nowNanos)
    {
        return true;
    }

    /** The state of a key never seen (a full bucket, an unused window). */
    public abstract long fullState();

    /** The state at {@code nowNanos} of one stored at {@code lastNanos} (refilled, windows moved on). */
    public abstract long refill(long state, long lastNanos, long nowNanos);

    /** Units a key in {@code state} (already {@link #refill refilled} to {@code nowNanos}) may take now. */
    public abstract long available(long state, long nowNanos);

    /** The state after taking {@code costUnits} (at most {@link #available}). */
    public abstract long charge(long state, long costUnits);

    /**
     * Exact nanoseconds from {@code nowNanos} until a key in {@code state} (refilled to then) has
     * {@code targetUnits} available if nothing else is taken; 0 if it has already.
     */
    public abstract long nanosUntil(long state, long targetUnits, long nowNanos);

    /** Nanoseconds from {@code nowNanos} until a key in {@code state} is back to {@link #fullState()}. */
    public abstract long nanosUntilFull(long state, long nowNanos);

    /** Whether a key in {@code state} (refilled to {@code nowNanos}) decides as one never seen, and so may be forgotten. */
    public boolean isFull(final long state, final long nowNanos)
    {
        return available(state, nowNanos) >= burstUnits();
    }

    /**
     * Share {@code index} of {@code shares} parts of this limit that together never grant more
     * than it (a budget split over shards).
     *
     * @throws IllegalArgumentException when a share would hold less than one token, saying what to change
     */
    public abstract Limit share(int index, int shares);

    /** The window a caller is told (RateLimit-Policy {@code w=}): whole seconds, rounded up. */
    public abstract long windowSeconds();

    /**
     * The same rate as a token bucket (for the SDK's local budgets, which are buckets whatever the
     * policy is): exact for buckets, {@link TokenBucket#approximately} for windows. Never throws.
     */
    public abstract TokenBucket.Rate asTokenBucket();

    /** Name of the algorithm as policies spell it. */
    public abstract String algorithm();

    static void checkShare(final long total, final int index, final int shares, final String what)
    {
        if (shares < 1 || index < 0 || index >= shares)
        {
            throw new IllegalArgumentException("share " + index + " of " + shares + " does not exist");
        }
        if (total < shares)
        {
            throw new IllegalArgumentException("a " + what + " of " + total + " cannot be split into " + shares +
                " shares of at least one token: raise the " + what + " to at least " + shares);
        }
    }

    /** The start (ns) of the window of {@code periodNanos} that holds {@code nanos}: windows are aligned to 0. */
    static long windowStart(final long nanos, final long periodNanos)
    {
        return nanos - Math.floorMod(nanos, periodNanos);
    }
}
