package dev.limiter.protocol;

/**
 * Which builds can run in one cluster together. A node's generation says what it writes to its
 * peers (Raft log entries, snapshots, the data protocol); it reads everything a peer of generation
 * {@link #OLDEST_PEER} or newer writes. During a rolling upgrade old and new builds run side by
 * side: a node starting next to a peer outside that range refuses to start and says which peer and
 * which generations ({@code PeerGenerationCheck} in the store). A generation is raised only by a
 * change an older build cannot read; {@link #OLDEST_PEER} only when this build stops reading an
 * older generation's records.
 *
 * <p>HELLO_RESULT carries both after the feature bits ({@link HelloCodec}). A node from before
 * generations answers HELLO with the feature bits alone: it is generation {@link #BEFORE_GENERATIONS}.
 */
public final class ProtocolGeneration
{
    /** The builds that answered HELLO with feature bits only (every build up to 0.1.0-SNAPSHOT of 2026-12-07). */
    public static final int BEFORE_GENERATIONS = 1;
    /** This build's generation. */
    public static final int CURRENT = 2;
    /** The oldest generation whose peers this build runs beside. */
    public static final int OLDEST_PEER = 1;

    private ProtocolGeneration()
    {
    }

    /**
     * Why two builds cannot run in one cluster, or null when they can: each must read what the
     * other writes.
     *
     * @param peer           the peer's generation
     * @param peerOldestPeer the oldest generation the peer runs beside
     */
    public static String incompatibility(final int peer, final int peerOldestPeer)
    {
        if (peer < OLDEST_PEER)
        {
            return "it speaks protocol generation " + peer + " and this build (generation " + CURRENT +
                ") reads generation " + OLDEST_PEER + " or newer: upgrade it first";
        }
        if (CURRENT < peerOldestPeer)
        {
            return "it reads protocol generation " + peerOldestPeer + " or newer and this build speaks generation " +
                CURRENT + ": this build is too old to join it; run a build of generation " + peerOldestPeer +
                " or newer";
        }
        return null;
    }
}
