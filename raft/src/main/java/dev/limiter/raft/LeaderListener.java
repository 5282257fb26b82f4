package dev.limiter.raft;

/** Told about leader changes of a {@link RaftNode}'s group. Called on a Ratis thread: return quickly. */
@FunctionalInterface
public interface LeaderListener
{
    /**
     * @param leaderId the new leader's id, or null when the group has none
     * @param isSelf   whether the new leader is this node
     */
    void onLeaderChanged(String leaderId, boolean isSelf);
}
