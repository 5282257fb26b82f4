package dev.limiter.protocol;

/** Message type codes carried in byte 5 of every frame. */
public final class MessageType
{
    /** One acquire; the body is an acquire batch whose count is 1. Answered by {@link #RESULT}. */
    public static final int ACQUIRE = 1;
    /** The answer to {@link #ACQUIRE}: a result batch whose count is 1. */
    public static final int RESULT = 2;
    /** Many acquires in one frame, answered in one {@link #BATCH_RESULT} in the same order. */
    public static final int BATCH_ACQUIRE = 3;
    /** The answer to {@link #BATCH_ACQUIRE}. */
    public static final int BATCH_RESULT = 4;
    /** Liveness probe with an empty body, answered by {@link #PONG}. */
    public static final int PING = 5;
    /** The answer to {@link #PING}, empty body, same correlation id. */
    public static final int PONG = 6;
    /** A request could not be served: error code and message. */
    public static final int ERROR = 7;
    /** Asks a node how it stands (role, term, indexes, members); empty body. */
    public static final int STATUS = 8;
    /** The answer to {@link #STATUS}: a UTF-8 JSON object as the whole body. */
    public static final int STATUS_RESULT = 9;
    /**
     * Retired: membership changed through the data port, which anybody who can reach it could
     * send. Nodes answer ERROR {@link ErrorCode#FORBIDDEN} and change nothing; membership changes go
     * through the authenticated admin API ({@code PUT/DELETE /v1/members/{id}}). The code stays
     * reserved so that an old tool gets that clear refusal.
     */
    public static final int MEMBERS = 10;
    /** Retired with {@link #MEMBERS}; never sent. */
    public static final int MEMBERS_RESULT = 11;
    /**
     * Asks for the policy set in force. Body: {@code u8 flags}, bit 0 = subscribe: the node then
     * also pushes every later set on this connection (a {@link #POLICIES_RESULT} with correlation
     * id 0) until the connection closes; bit 1 = an instance id follows ({@code u8 length | UTF-8},
     * 1 to 255 bytes), which the node counts for {@link #FLEET} (only with bit 0). Any member
     * answers, followers included.
     */
    public static final int POLICIES = 12;
    /** The answer to {@link #POLICIES} (and each push): {@code u64 set version | PolicySet (protobuf)}. */
    public static final int POLICIES_RESULT = 13;
    /**
     * An SDK reports a window in which it decided on its own (body: a {@code DegradedWindow},
     * protobuf, at most {@link #MAX_DEGRADED_REPORT_BYTES}). Answered by
     * {@link #DEGRADED_REPORT_RESULT} once it is in the audit log, or ERROR: NOT_LEADER from a
     * follower, MALFORMED_FRAME for a body that is not a valid window, OVERLOADED when this
     * connection or the node has taken as many reports as it takes for now (send it again later).
     */
    public static final int DEGRADED_REPORT = 14;
    /** The answer to {@link #DEGRADED_REPORT}: empty body. */
    public static final int DEGRADED_REPORT_RESULT = 15;
    /**
     * Pushed by a node (correlation id 0) to connections that subscribed to policies with an
     * instance id: how many distinct SDK instances are subscribed at this node. Body: {@code u32
     * instances}. SDKs split fleet-wide emergency budgets by it.
     */
    public static final int FLEET = 16;
    /**
     * Asks which node leads each shard (empty body), so that a client sends each entry straight to
     * the leader of its shard ({@link ShardMap}). Any member answers, followers included.
     */
    public static final int SHARD_MAP = 17;
    /** The answer to {@link #SHARD_MAP}: a {@link ShardMap}. */
    public static final int SHARD_MAP_RESULT = 18;

    /**
     * Gives back a lease a concurrency limit granted: {@code i64 lease id | u32 check | an ACQUIRE
     * body} (one entry: the descriptor and cost of the acquire that took it; the id and check as
     * the grant's result listed them). A check that no longer matches the limits the entry's
     * policies lease now (a new version since) gives back nothing: the lease expires where it is. Answered by {@link #RESULT}
     * with reason RELEASED, or ERROR (NOT_LEADER from a node that does not lead the entry's shard).
     */
    public static final int RELEASE = 19;

    /**
     * The first frame an SDK sends on a new connection: the {@link Features} it understands
     * ({@link HelloCodec}). Answered by {@link #HELLO_RESULT}; a node from before HELLO answers
     * ERROR {@link ErrorCode#UNKNOWN_TYPE}, which means it has none of the features.
     */
    public static final int HELLO = 20;
    /** The answer to {@link #HELLO}: the node's {@link Features}. */
    public static final int HELLO_RESULT = 21;

    /** Largest {@link #DEGRADED_REPORT} body a node takes. */
    public static final int MAX_DEGRADED_REPORT_BYTES = 64 * 1024;

    private MessageType()
    {
    }

    public static String name(final int type)
    {
        switch (type)
        {
            case ACQUIRE: return "ACQUIRE";
            case RESULT: return "RESULT";
            case BATCH_ACQUIRE: return "BATCH_ACQUIRE";
            case BATCH_RESULT: return "BATCH_RESULT";
            case PING: return "PING";
            case PONG: return "PONG";
            case ERROR: return "ERROR";
            case STATUS: return "STATUS";
            case STATUS_RESULT: return "STATUS_RESULT";
            case MEMBERS: return "MEMBERS";
            case MEMBERS_RESULT: return "MEMBERS_RESULT";
            case POLICIES: return "POLICIES";
            case POLICIES_RESULT: return "POLICIES_RESULT";
            case DEGRADED_REPORT: return "DEGRADED_REPORT";
            case DEGRADED_REPORT_RESULT: return "DEGRADED_REPORT_RESULT";
            case FLEET: return "FLEET";
            case SHARD_MAP: return "SHARD_MAP";
            case SHARD_MAP_RESULT: return "SHARD_MAP_RESULT";
            case RELEASE: return "RELEASE";
            case HELLO: return "HELLO";
            case HELLO_RESULT: return "HELLO_RESULT";
            default: return "UNKNOWN(" + type + ")";
        }
    }
}
