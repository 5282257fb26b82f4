package dev.limiter.protocol;

/** Error codes carried by an ERROR frame. */
public enum ErrorCode
{
    /** The frame's structure is broken (lengths disagree, truncated body). */
    MALFORMED_FRAME(1),
    /** The version byte is not one this node speaks. */
    UNSUPPORTED_VERSION(2),
    /** The type byte is not a request this node serves. */
    UNKNOWN_TYPE(3),
    /** A descriptor field failed validation; the message names the entry and the field. */
    INVALID_DESCRIPTOR(4),
    /** The cost is not a positive 32-bit integer. */
    INVALID_COST(5),
    /** More entries in one batch than {@link AcquireCodec#MAX_BATCH} allows. */
    BATCH_TOO_LARGE(6),
    /** A frame longer than the receiver's maximum frame size; the connection is then closed. */
    FRAME_TOO_LARGE(7),
    /** The node could not take the request now (in a cluster: its log is behind); retry after a short backoff. */
    OVERLOADED(8),
    /** A bug on the node; the message says what happened. */
    INTERNAL(9),
    /**
     * This node does not lead the cluster now; the message is the leader's data address
     * ({@code host:port}), or empty while an election is under way. Nothing was decided.
     */
    NOT_LEADER(10),
    /**
     * The data port does not take this request from anybody (membership changes go through the
     * authenticated admin API), or the sender sent more of it than a node accepts; nothing changed.
     */
    FORBIDDEN(11);

    private final int code;

    ErrorCode(final int code)
    {
        this.code = code;
    }

    public int code()
    {
        return code;
    }

    /** @return the code, or {@code null} if this version does not know it */
    public static ErrorCode ofOrNull(final int code)
    {
        for (final ErrorCode value : values())
        {
            if (value.code == code)
            {
                return value;
            }
        }
        return null;
    }
}
