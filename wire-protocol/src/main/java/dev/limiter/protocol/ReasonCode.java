package dev.limiter.protocol;

/** Why a decision came out the way it did (byte 1 of a result record). */
public enum ReasonCode
{
    /** Enough tokens: allowed and charged. */
    ALLOWED(0),
    /** Not enough tokens now; retry-after says when there will be. */
    RATE_LIMITED(1),
    /** The cost is larger than the bucket can ever hold: retrying can never succeed. */
    COST_EXCEEDS_BURST(2),
    /** The store has no room for a new bucket and none could be evicted. Not a client fault. */
    STORE_FULL(3),
    /** Allowed without spending tokens: an exemption (with an owner, reason and expiry) covers the request. */
    EXEMPT(4),
    /**
     * Decided by the SDK, not the cluster: no node answered in time and the policy fails CLOSED
     * (the SDK's own answers while the cluster is unreachable are flagged degraded).
     */
    CLUSTER_UNAVAILABLE(5),
    /** Decided by the SDK from its emergency budget while no node answered (allowed or not: see allowed). */
    LOCAL_EMERGENCY(6),
    /**
     * Allowed and charged beyond the policy's limit, within the soft overage it allows (a
     * percentage of its capacity): counted apart, for billing and alerting.
     */
    SOFT_OVERAGE(7),
    /**
     * Allowed and charged against tokens that exist only after retry-after (a WAIT policy): the
     * caller proceeds once that time has passed. {@code acquireBlocking} waits it out itself.
     */
    RESERVED(8),
    /**
     * The answer to a RELEASE: the lease's cost is given back (or it had expired already, which
     * frees nothing); remaining is what the key has free now.
     */
    RELEASED(9),
    /**
     * Allowed without a bucket: a descriptor of Envoy's rate limit service that no policy selects,
     * or that an unlimited policy does (envoyproxy/ratelimit answers such descriptors OK with no
     * limit too). Nothing is charged.
     */
    NO_LIMIT(10),
    /**
     * Not decided: this entry cannot be decided as it was sent (a field its policy keys on is
     * missing, or the policies that match it cannot be charged together). Nothing is charged; the
     * result's refusal section says why, and the other entries of the frame are decided as usual.
     */
    INVALID_REQUEST(11);

    private static final ReasonCode[] BY_CODE = values();

    private final int code;

    ReasonCode(final int code)
    {
        this.code = code;
    }

    public int code()
    {
        return code;
    }

    /** Whether this version knows the code. */
    public static boolean known(final int code)
    {
        return code >= 0 && code < BY_CODE.length;
    }

    /** @throws IllegalArgumentException for a code this version does not know */
    public static ReasonCode of(final int code)
    {
        if (code < 0 || code >= BY_CODE.length)
        {
            throw new IllegalArgumentException("unknown reason code " + code);
        }
        return BY_CODE[code];
    }
}
