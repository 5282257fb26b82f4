package dev.limiter.raft;

/** This node is not the leader of its group; {@link #leaderHint()} names the one it believes is. */
public final class NotLeaderException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    private final String leaderHint;

    public NotLeaderException(final String nodeId, final String leaderHint)
    {
        super("node " + nodeId + " is not the leader" + (leaderHint == null ? " (no leader known yet)" : "; try " + leaderHint));
        this.leaderHint = leaderHint;
    }

    /** The leader's id, or null when none is known (an election is under way). */
    public String leaderHint()
    {
        return leaderHint;
    }
}
