package dev.limiter.cli.pilot;

/**
 * The pilot's own token bucket of the policy under test, fed the trace's due times in order: what
 * one tenant's traffic alone would have been refused under {@code rate} and {@code burst}. It is the
 * prediction a shadow phase is compared with, and the test of whether a rejection is explained by
 * the tenant's own traffic. Time comes from the caller.
 */
final class ModelBucket
{
    private final double ratePerNano;
    private final double burst;
    private double tokens;
    private long at = Long.MIN_VALUE;

    ModelBucket(final long ratePerSecond, final long burst)
    {
        this.ratePerNano = ratePerSecond / 1e9;
        this.burst = burst;
        this.tokens = burst;
    }

    /** Takes one token for a request due at {@code nanos}: false when the bucket had none. */
    boolean take(final long nanos)
    {
        if (at != Long.MIN_VALUE)
        {
            tokens = Math.min(burst, tokens + Math.max(0, nanos - at) * ratePerNano);
        }
        at = nanos;
        if (tokens >= 1)
        {
            tokens -= 1;
            return true;
        }
        return false;
    }
}
