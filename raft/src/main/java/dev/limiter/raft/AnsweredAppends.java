package dev.limiter.raft;

import org.apache.ratis.conf.Parameters;
import org.apache.ratis.grpc.GrpcFactory;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.rpc.RpcFactory;
import org.apache.ratis.rpc.RpcType;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.leader.FollowerInfo;
import org.apache.ratis.server.leader.LeaderState;
import org.apache.ratis.server.leader.LogAppender;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * When each follower of each group this member leads was sent the last append it answered, which is
 * what a leader lease must be measured from. A follower restarts its election timer when an append
 * arrives, after it was sent; the time of the reply, which is all Ratis' role information shows,
 * is later by the round trip and by any stall of the leader between the reply's arrival and its
 * handling, and a lease measured from it could outlast the followers' patience. Ratis keeps the send
 * time per follower ({@link FollowerInfo#getLastRespondedAppendEntriesSendTime()}) for its own lease;
 * {@link Transport} (Ratis' gRPC transport, see {@link RaftNode#start()}) hands this class each
 * leader's followers as Ratis creates them.
 */
final class AnsweredAppends
{
    /** Where {@link Factory} finds this member's instance among Ratis' server parameters. */
    static final String PARAMETER = "dev.limiter.raft.answeredAppends";

    /** A follower as the leader of {@code term} sees it. */
    private record Follower(long term, FollowerInfo info)
    {
    }

    private final Map<RaftGroupId, Map<RaftPeerId, Follower>> byGroup = new ConcurrentHashMap<>();

    /** Records a follower of {@code group} as this member, leading in {@code term}, starts sending to it. */
    void leading(final RaftGroupId group, final long term, final FollowerInfo follower)
    {
        byGroup.computeIfAbsent(group, g -> new ConcurrentHashMap<>()).put(follower.getId(), new Follower(term, follower));
    }

    /**
     * When (in {@link System#nanoTime()} terms) the last append that {@code follower} answered was sent
     * by this member leading {@code group} in {@code term}, or {@link Long#MIN_VALUE} when none is
     * known for that term.
     */
    long sentNanos(final RaftGroupId group, final long term, final RaftPeerId follower, final long now)
    {
        final Map<RaftPeerId, Follower> followers = byGroup.get(group);
        final Follower known = followers == null ? null : followers.get(follower);
        if (known == null || known.term() != term)
        {
            return Long.MIN_VALUE;
        }
        return now - known.info().getLastRespondedAppendEntriesSendTime().elapsedTime().toLong(TimeUnit.NANOSECONDS);
    }

    /**
     * Ratis' gRPC transport with {@link Factory}: named by its class in {@code raft.rpc.type}, which
     * Ratis instantiates by reflection.
     */
    public static final class Transport implements RpcType
    {
        @Override
        public String name()
        {
            return Transport.class.getName();
        }

        @Override
        public RpcFactory newFactory(final Parameters parameters)
        {
            return new Factory(parameters);
        }
    }

    /** Ratis' gRPC factory, which also hands each new leader's followers to this member's {@link AnsweredAppends}. */
    static final class Factory extends GrpcFactory
    {
        private final AnsweredAppends answered;

        Factory(final Parameters parameters)
        {
            super(parameters);
            this.answered = parameters.getNonNull(PARAMETER, AnsweredAppends.class);
        }

        @Override
        public LogAppender newLogAppender(final RaftServer.Division server, final LeaderState state, final FollowerInfo follower)
        {
            answered.leading(server.getMemberId().getGroupId(), server.getInfo().getCurrentTerm(), follower);
            return super.newLogAppender(server, state, follower);
        }
    }
}
