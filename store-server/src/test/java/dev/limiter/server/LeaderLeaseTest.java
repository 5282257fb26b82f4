package dev.limiter.server;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.MessageType;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClosingTogether;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A leader decides only while it holds its leader lease: a majority answered it within
 * {@link RaftNodeConfig#leaderLeaseMillis()} and it is still a member. A leader cut off or removed stops
 * deciding within that, before anybody else can be elected, and never answers from a table it no
 * longer owns (cut off: {@link LeaderPauseDrillTest}).
 */
@Timeout(120)
class LeaderLeaseTest
{
    private static final String TOKEN = "lease-test-admin-token-0123456789";
    private static final long LEADER_LEASE_MILLIS =
        RaftNodeConfig.DEFAULT_ELECTION_TIMEOUT_MIN.toMillis() - RaftNodeConfig.MAX_ROUND_TRIP_MILLIS;

    @TempDir
    Path dir;

    private final Map<String, StoreServer> nodes = new LinkedHashMap<>();

    @AfterEach
    void stop()
    {
        ClosingTogether.close(nodes.values());
    }

    private void startCluster() throws Exception
    {
        final int[] ports = ClusterPorts.free(3, 100);
        final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
        for (int i = 0; i < 3; i++)
        {
            peers.put("n" + (i + 1), new InetSocketAddress("127.0.0.1", ports[i]));
        }
        for (final Map.Entry<String, InetSocketAddress> peer : peers.entrySet())
        {
            Files.createDirectories(dir.resolve(peer.getKey() + "-config"));
            nodes.put(peer.getKey(), new StoreServer(TestNode.config(dir.resolve(peer.getKey() + "-config"), peer.getValue().getPort(), 1)
                .adminToken(TOKEN).nodeId(peer.getKey()).peers(peers).raftPortOffset(100).dataDir(dir.resolve(peer.getKey()))).start());
        }
    }

    private StoreServer awaitLeader()
    {
        final AtomicReference<StoreServer> leader = new AtomicReference<>();
        Await.until("a leader", Duration.ofSeconds(30), () ->
        {
            leader.set(nodes.values().stream().filter(node -> node.replication().canDecide()).findFirst().orElse(null));
            return leader.get() != null;
        });
        return leader.get();
    }

    private static byte[] acquire(final String tenant)
    {
        return RawConnection.acquireBody(AcquireCodec.encodeFields(tenant, "", "", "/v1/orders/1", "", ""));
    }

    @Test
    void anIdleLeaderKeepsItsLeaseWithoutGaps() throws Exception
    {
        startCluster();
        final StoreServer leader = awaitLeader();
        // the lease settles after the election before it is sampled
        Thread.sleep(500);
        // Heartbeats renew the leader lease well within it: sampled every millisecond for two seconds, it never lapses.
        int lapses = 0;
        final long end = System.nanoTime() + 2 * SECOND;
        while (System.nanoTime() < end)
        {
            lapses += leader.replication().canDecide() ? 0 : 1;
            // one sample a millisecond
            Thread.sleep(1);
        }
        assertEquals(0, lapses, "samples in which the idle leader could not decide");
    }

    @Test
    void aLeaderRemovedUnderLoadNeverDecidesAgain() throws Exception
    {
        startCluster();
        final StoreServer leader = awaitLeader();
        final String leaderId = leader.replication().node().nodeId();
        final List<String> followers = nodes.keySet().stream().filter(id -> !id.equals(leaderId)).toList();
        final HttpClient http = HttpClient.newHttpClient();

        // Load on the leader's data port for the whole drill; each answer is kept with the time its request left.
        final AtomicBoolean stop = new AtomicBoolean();
        final List<long[]> answers = java.util.Collections.synchronizedList(new ArrayList<>()); // {sent nanos, type}
        final Thread load = new Thread(() ->
        {
            try (RawConnection raw = new RawConnection(leader.port()))
            {
                for (long i = 0; !stop.get(); i++)
                {
                    final long sent = System.nanoTime();
                    final RawConnection.Answer answer = raw.request(MessageType.ACQUIRE, i, acquire("tenant-" + (i % 50)));
                    if (answer == null)
                    {
                        return; // the node closed the connection: no answer is no decision
                    }
                    answers.add(new long[] {sent, answer.type()});
                }
            }
            catch (final java.io.IOException closed)
            {
                // the node went away: the drill reads what it answered before
            }
        }, "load");
        load.start();
        // the load runs before the removals
        Thread.sleep(300);

        // Two members removed: first a follower, then the leader itself (the last follower stays, alone).
        final String removeFollower = AdminCalls.call(http, leader.adminPort(), "DELETE", "/v1/members/" + followers.get(0) + "?reason=drill",
            null, TOKEN).body();
        assertTrue(removeFollower.contains("\"" + leaderId + "\""), removeFollower);
        final int status = AdminCalls.call(http, leader.adminPort(), "DELETE", "/v1/members/" + leaderId + "?reason=drill", null, TOKEN)
            .statusCode();
        final long removed = System.nanoTime();
        assertEquals(200, status, "the removal committed");
        // past the lease of the removed leader, under load
        Thread.sleep(LEADER_LEASE_MILLIS + 500);
        stop.set(true);
        load.join(10_000);

        final long after = removed + LEADER_LEASE_MILLIS * 1_000_000L;
        final long decidedAfter = answers.stream().filter(a -> a[0] - after > 0 && a[1] != MessageType.ERROR).count();
        final long answeredAfter = answers.stream().filter(a -> a[0] - after > 0).count();
        assertTrue(answeredAfter > 0, "the removed leader was asked after its removal");
        assertEquals(0, decidedAfter, "decisions the removed leader made after its removal (of " + answeredAfter + " answers)");
        assertTrue(answers.stream().anyMatch(a -> a[0] - removed < 0 && a[1] != MessageType.ERROR), "it decided while it led");
        try (RawConnection raw = new RawConnection(leader.port()))
        {
            assertEquals(ErrorCode.NOT_LEADER, raw.request(MessageType.ACQUIRE, 1, acquire("acme")).errorCode());
        }
    }
}
