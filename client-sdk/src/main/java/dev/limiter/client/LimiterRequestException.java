package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;

/** The node refused the request with an ERROR frame; {@link #code()} says why. */
public final class LimiterRequestException extends LimiterException
{
    private static final long serialVersionUID = 1L;

    private final transient ErrorCode code;
    private final String detail;

    public LimiterRequestException(final ErrorCode code, final String message)
    {
        super((code == null ? "ERROR" : code.name()) + ": " + message);
        this.code = code;
        this.detail = message;
    }

    /** The node's message as it sent it (for NOT_LEADER: the leader's {@code host:port}, or empty). */
    public String detail()
    {
        return detail;
    }

    /** The error code, or null for a code this SDK version does not know. */
    public ErrorCode code()
    {
        return code;
    }
}
