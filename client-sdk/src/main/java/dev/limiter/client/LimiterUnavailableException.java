package dev.limiter.client;

/** No connection to any store node is open (the SDK keeps reconnecting in the background). */
public final class LimiterUnavailableException extends LimiterException
{
    private static final long serialVersionUID = 1L;

    public LimiterUnavailableException(final String message)
    {
        super(message);
    }

    public LimiterUnavailableException(final String message, final Throwable cause)
    {
        super(message, cause);
    }
}
