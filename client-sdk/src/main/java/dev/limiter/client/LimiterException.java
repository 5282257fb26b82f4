package dev.limiter.client;

/** Base of the SDK's failures: the cluster could not give a decision. */
public class LimiterException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    public LimiterException(final String message)
    {
        super(message);
    }

    public LimiterException(final String message, final Throwable cause)
    {
        super(message, cause);
    }
}
