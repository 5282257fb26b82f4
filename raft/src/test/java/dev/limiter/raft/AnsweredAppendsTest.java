package dev.limiter.raft;

import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.leader.FollowerInfo;
import org.apache.ratis.util.Timestamp;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lease's clock: when a follower was sent the last append it answered, in the term this member leads. */
class AnsweredAppendsTest
{
    private static final RaftGroupId GROUP = RaftGroupId.randomId();
    private static final RaftPeerId N2 = RaftPeerId.valueOf("n2");

    /** A follower as Ratis keeps it, answering only what the lease reads. */
    private static FollowerInfo follower(final RaftPeerId id, final long answeredAppendSentNanos, final long repliedNanos)
    {
        return (FollowerInfo)Proxy.newProxyInstance(FollowerInfo.class.getClassLoader(), new Class<?>[] {FollowerInfo.class},
            (proxy, method, args) -> switch (method.getName())
            {
                case "getId" -> id;
                case "getLastRespondedAppendEntriesSendTime" -> Timestamp.valueOf(answeredAppendSentNanos);
                case "getLastRpcResponseTime" -> Timestamp.valueOf(repliedNanos);
                default -> throw new UnsupportedOperationException(method.getName());
            });
    }

    @Test
    void aFollowerCountsAsHeardWhenTheLastAppendItAnsweredWasSentNotWhenItsReplyWasHandled()
    {
        final AnsweredAppends answered = new AnsweredAppends();
        final long now = System.nanoTime();
        // Sent 300 ms ago, its reply handled just now (a stall of the leader in between).
        final long sent = now - TimeUnit.MILLISECONDS.toNanos(300);
        answered.leading(GROUP, 7, follower(N2, sent, now));
        final long heard = answered.sentNanos(GROUP, 7, N2, System.nanoTime());
        assertTrue(Math.abs(heard - sent) < TimeUnit.MILLISECONDS.toNanos(50), "heard at the send time: " + (now - heard) / 1_000_000 + " ms ago");
    }

    @Test
    void followersOfAnotherTermGroupOrIdAreNotKnown()
    {
        final AnsweredAppends answered = new AnsweredAppends();
        final long now = System.nanoTime();
        answered.leading(GROUP, 7, follower(N2, now, now));
        assertEquals(Long.MIN_VALUE, answered.sentNanos(GROUP, 8, N2, now), "a follower of an earlier term says nothing of this one");
        assertEquals(Long.MIN_VALUE, answered.sentNanos(RaftGroupId.randomId(), 7, N2, now));
        assertEquals(Long.MIN_VALUE, answered.sentNanos(GROUP, 7, RaftPeerId.valueOf("n3"), now));
        // Leading again in a later term, Ratis hands over new followers.
        answered.leading(GROUP, 8, follower(N2, now, now));
        assertEquals(now, answered.sentNanos(GROUP, 8, N2, now), 1_000_000);
    }
}
