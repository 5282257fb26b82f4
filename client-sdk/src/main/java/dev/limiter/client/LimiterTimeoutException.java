package dev.limiter.client;

/** No answer arrived within the call's deadline. */
public final class LimiterTimeoutException extends LimiterException
{
    private static final long serialVersionUID = 1L;

    public LimiterTimeoutException(final String message)
    {
        super(message);
    }
}
