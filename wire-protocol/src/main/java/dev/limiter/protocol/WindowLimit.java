package dev.limiter.protocol;

/**
 * What every window limit shares: it counts whole tokens ({@code unitsPerToken} 1) up to
 * {@code limit} per window, on the cluster's UTC wall time, and has no burst beyond its limit.
 */
public abstract class WindowLimit extends Limit
{
    /** Tokens per window. */
    protected final long limit;

    protected WindowLimit(final long limit)
    {
        if (limit < 1)
        {
            throw new IllegalArgumentException("a window's limit must be at least 1 token, was " + limit);
        }
        this.limit = limit;
    }

    @Override
    public final boolean wallClock()
    {
        return true;
    }

    @Override
    public final long unitsPerToken()
    {
        return 1;
    }

    @Override
    public final long burstTokens()
    {
        return limit;
    }
}
