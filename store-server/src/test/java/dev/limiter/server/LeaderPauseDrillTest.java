package dev.limiter.server;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.MessageType;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.testing.ProcessCluster;
import dev.limiter.server.testing.RawConnection;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Both followers frozen (SIGSTOP: their connections stay open, nothing answers, as behind a
 * partition): the leader stops deciding within its leader lease, not when Ratis steps it down.
 */
@Timeout(120)
class LeaderPauseDrillTest
{
    @TempDir
    Path dir;

    @Test
    void aLeaderWhoseFollowersFreezeStopsDecidingWithinItsLease() throws Exception
    {
        try (ProcessCluster cluster = new ProcessCluster(dir, 3))
        {
            final String leader = cluster.awaitLeader(null);
            final byte[] acquire = RawConnection.acquireBody(AcquireCodec.encodeFields("acme", "", "", "/v1/orders/1", "", ""));
            try (RawConnection raw = new RawConnection(cluster.port(leader)))
            {
                assertEquals(MessageType.RESULT, raw.request(MessageType.ACQUIRE, 1, acquire).type(), "the leader decides");
                for (final String id : cluster.ports().keySet())
                {
                    if (!id.equals(leader))
                    {
                        cluster.freeze(id);
                    }
                }
                final long frozen = System.nanoTime();
                long answeredAt = 0;
                for (long i = 2; System.nanoTime() - frozen < 5_000_000_000L; i++)
                {
                    final RawConnection.Answer answer = raw.request(MessageType.ACQUIRE, i, acquire);
                    if (answer.errorCode() == ErrorCode.NOT_LEADER)
                    {
                        answeredAt = System.nanoTime();
                        break;
                    }
                    // paced requests of a measurement: Await backs off to 50 ms, too coarse here
                    Thread.sleep(2);
                }
                assertTrue(answeredAt != 0, "the leader kept deciding 5 s after its followers froze");
                final long millis = (answeredAt - frozen) / 1_000_000;
                final long leaderLease =
                    RaftNodeConfig.DEFAULT_ELECTION_TIMEOUT_MIN.toMillis() - RaftNodeConfig.MAX_ROUND_TRIP_MILLIS;
                System.out.println("leader stopped deciding " + millis + " ms after its followers froze" +
                    " (leader lease " + leaderLease + " ms)");
                // The followers' last replies came before the freeze, so the leader lease ends within it;
                // the slack covers this shared machine's scheduling.
                assertTrue(millis <= leaderLease + 100,
                    "stopped deciding " + millis + " ms after its followers froze" +
                    " (leader lease " + leaderLease + " ms)");
            }
        }
    }
}
