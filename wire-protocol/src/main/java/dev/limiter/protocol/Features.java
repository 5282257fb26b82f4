package dev.limiter.protocol;

import java.util.StringJoiner;

/**
 * What one end of a connection can do beyond the base protocol, as bits exchanged in HELLO and
 * HELLO_RESULT ({@link HelloCodec}) when the connection opens. A peer acts on a feature only when
 * the other end listed it; a node that predates HELLO answers it with ERROR UNKNOWN_TYPE, and is
 * taken to have {@link #BEFORE_HELLO}. Bits are never reused: a retired feature keeps its bit unset
 * from then on. The SDK acts on {@link #FLEET} and {@link #SHARD_MAP}, the node on
 * {@link #DECISION_IDS}; {@link #RELEASE} and {@link #CHECK} tell a peer what the node takes (a node
 * without them refuses those requests by their error codes, as before HELLO).
 */
public final class Features
{
    /** POLICIES may carry an instance id, and the node pushes FLEET counts to such subscribers. */
    public static final long FLEET = 1L;
    /** The node answers SHARD_MAP. */
    public static final long SHARD_MAP = 1L << 1;
    /** The node takes RELEASE, giving back a concurrency lease by its id. */
    public static final long RELEASE = 1L << 2;
    /** The node takes an acquire of cost 0 as a check that charges nothing. */
    public static final long CHECK = 1L << 3;
    /**
     * Result frames may end with a decision-id section ({@link DecisionIds}): sent by a node only to a
     * peer that listed this bit, so an older SDK never sees it.
     */
    public static final long DECISION_IDS = 1L << 4;

    /** What a node of this build offers. */
    public static final long NODE = FLEET | SHARD_MAP | RELEASE | CHECK | DECISION_IDS;
    /** What an SDK of this build understands. */
    public static final long SDK = FLEET | SHARD_MAP | RELEASE | CHECK | DECISION_IDS;
    /**
     * What an SDK assumes of a node that answers HELLO with UNKNOWN_TYPE: SHARD_MAP, which a node
     * from before it refuses harmlessly with UNKNOWN_TYPE too. Not FLEET: a subscription with an
     * instance id would be refused by a node from before FLEET, so such nodes count no instances.
     */
    public static final long BEFORE_HELLO = SHARD_MAP;

    private static final String[] NAMES = {"FLEET", "SHARD_MAP", "RELEASE", "CHECK", "DECISION_IDS"};

    private Features()
    {
    }

    /** Whether {@code features} lists every bit of {@code feature}. */
    public static boolean has(final long features, final long feature)
    {
        return (features & feature) == feature;
    }

    /** The features' names, for logs: known bits by name, unknown ones (a newer peer's) as {@code bit N}. */
    public static String names(final long features)
    {
        final StringJoiner names = new StringJoiner(",", "[", "]");
        for (int bit = 0; bit < Long.SIZE; bit++)
        {
            if ((features & (1L << bit)) != 0)
            {
                names.add(bit < NAMES.length ? NAMES[bit] : "bit " + bit);
            }
        }
        return names.toString();
    }
}
