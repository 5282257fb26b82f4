package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ProcessCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Failover as a caller sees it, ten times in a row: with closed-loop load running, the leader
 * process is killed with SIGKILL, a fresh client asks for a decision, and the killed member is
 * started again and catches up before the next round. Every round, a node (never the SDK on its
 * own) must decide the fresh client's call within 1 s of the kill.
 *
 * <p>Before the drill waited for the restarted member to catch up, and before members hurried
 * their channels to a peer that came back (RaftNode), 13 of 30 rounds took over 1 s, up to 6.2 s:
 * a kill during the catch-up is a second failure, and a survivor's channel still in gRPC's
 * reconnect back-off fails its vote requests at once. With both, two runs gave every round under
 * 0.93 s; with three groups, two runs gave 19 of 20 under 1 s, the first of the first 1.02 s
 * (docs/cluster.md). When it fails, the nodes' logs are kept too.
 * Two minutes long, so it runs only when asked; when a round takes over 1 s it copies the nodes'
 * logs to {@code target/ten-kill-drill/}:
 * {@code mvn -B -ntp test -pl store-server -am -Dtest=TenKillDrillTest -Dlimiter.drills=true -Dsurefire.failIfNoSpecifiedTests=false}.
 */
@Timeout(420)
@EnabledIfSystemProperty(named = "limiter.drills", matches = "true")
class TenKillDrillTest
{
    @TempDir
    Path dir;

    @Test
    void tenLeaderKillsInARowEachAnsweredByANodeSoonAfter() throws Exception
    {
        tenKills(1);
    }

    /**
     * With three Raft groups (one shard each, leaders spread over the three nodes): round r kills
     * the leader of group r mod 3, and the fresh client asks for a tenant of that group's shard.
     */
    @Test
    void tenKillsOfTheLeaderOfEachGroupInTurnWithThreeGroups() throws Exception
    {
        tenKills(3);
    }

    private void tenKills(final int groups) throws Exception
    {
        try
        {
            runTenKills(groups);
        }
        catch (final AssertionError e)
        {
            keepNodeLogs(groups); // where the seconds went
            throw e;
        }
    }

    private void runTenKills(final int groups) throws Exception
    {
        try (ProcessCluster cluster = new ProcessCluster(dir, 3, groups))
        {
            final List<String> endpoints = new ArrayList<>();
            cluster.ports().values().forEach(p -> endpoints.add("127.0.0.1:" + p));
            final String all = String.join(",", endpoints);
            final AtomicBoolean running = new AtomicBoolean(true);
            final List<Long> answeredMillis = new ArrayList<>();
            awaitSpreadLeaders(cluster, groups);
            try (LimiterClient load = LimiterClient.builder().endpoints(all).connections(1).deadline(Duration.ofSeconds(2)).build())
            {
                // Closed-loop load through the kills; a caller does some work between requests (1 ms).
                final Thread loader = new Thread(() ->
                {
                    int i = 0;
                    while (running.get())
                    {
                        try
                        {
                            load.acquireBlocking(Descriptor.of("load-" + (i++ % 200), "/v1/orders/1"), 1);
                        }
                        catch (final LimiterException e)
                        {
                            // no leader for a moment
                        }
                        LockSupport.parkNanos(1_000_000L);
                    }
                });
                loader.start();
                for (int round = 0; round < 10; round++)
                {
                    final int group = round % groups;
                    final String leader = cluster.awaitLeader(null, group);
                    final long killedAt = System.nanoTime();
                    System.out.println("round " + round + ": SIGKILL " + leader + " (leads group " + group + ") at " + java.time.Instant.now());
                    cluster.kill(leader); // SIGKILL
                    answeredMillis.add(firstNodeAnswerMillis(all, tenantOf(group, groups), killedAt));
                    System.out.println("round " + round + ": first node decision " + answeredMillis.get(round) + " ms after the kill");
                    cluster.restart(leader);
                    awaitMember(cluster, leader);
                    awaitCaughtUp(cluster, leader, groups);
                    awaitSpreadLeaders(cluster, groups);
                }
                running.set(false);
                loader.join(10_000);
            }
            System.out.println("ten SIGKILLs of a group's leader (" + groups + " group(s)): a fresh client's first node decision after " +
                answeredMillis + " ms");
            if (answeredMillis.stream().anyMatch(ms -> ms > 1000))
            {
                keepNodeLogs(groups);
            }
            for (int round = 0; round < answeredMillis.size(); round++)
            {
                assertTrue(answeredMillis.get(round) < 1000, "round " + round + ": first node decision " + answeredMillis.get(round) +
                    " ms after the kill (all rounds: " + answeredMillis + ")");
            }
        }
    }

    /** A tenant whose buckets live on shard {@code group} (with one shard per group, group g's). */
    private static String tenantOf(final int group, final int groups)
    {
        for (int i = 0; ; i++)
        {
            final String tenant = "fresh-" + i;
            final byte[] bytes = tenant.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            if (dev.limiter.server.engine.FrameRouter.tenantShard(new org.agrona.concurrent.UnsafeBuffer(bytes), 0, bytes.length, groups) == group)
            {
                return tenant;
            }
        }
    }

    /**
     * With several groups, waits (up to 60 s) until each is led by the member it prefers (n1 leads
     * group 0, n2 group 1, n3 group 2), so that no hand-over back to a returned member runs into the
     * next round.
     */
    private static void awaitSpreadLeaders(final ProcessCluster cluster, final int groups) throws InterruptedException
    {
        if (groups == 1)
        {
            return;
        }
        Await.until("the groups' leaders to spread back", Duration.ofSeconds(60), () ->
        {
            boolean spread = true;
            for (int g = 0; g < groups && spread; g++)
            {
                spread = "LEADER".equals(cluster.role("n" + (g % 3 + 1), g));
            }
            return spread;
        });
    }

    /** Copies the nodes' logs where they outlive the test, to see where a slow round's time went. */
    private void keepNodeLogs(final int groups) throws java.io.IOException
    {
        final Path kept = Path.of("target", "ten-kill-drill", groups + "-groups");
        java.nio.file.Files.createDirectories(kept);
        try (java.util.stream.Stream<Path> logs = java.nio.file.Files.walk(dir))
        {
            for (final Path log : logs.filter(p -> p.getFileName().toString().equals("node.log")).toList())
            {
                java.nio.file.Files.copy(log, kept.resolve(log.getParent().getFileName() + ".log"),
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
        System.out.println("a round took over 1 s: the nodes' logs are in " + kept.toAbsolutePath());
    }

    /** A fresh client's first decision made by a node (not by the SDK itself), in ms after the kill; bounded at 10 s. */
    private static long firstNodeAnswerMillis(final String endpoints, final String tenant, final long killedAt)
        throws InterruptedException
    {
        try (LimiterClient fresh = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofMillis(500))
            .circuit(3, Duration.ofMillis(50)).build())
        {
            final long end = killedAt + 10_000_000_000L;
            while (System.nanoTime() < end)
            {
                try
                {
                    final Decision decision = fresh.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
                    if (!decision.degraded())
                    {
                        return (System.nanoTime() - killedAt) / 1_000_000;
                    }
                }
                catch (final LimiterException e)
                {
                    // no node decided: ask again
                }
                // paced retries of a measurement: Await backs off to 50 ms, too coarse here
                Thread.sleep(5);
            }
            return Long.MAX_VALUE;
        }
    }

    /**
     * Waits (up to 60 s) until the restarted member has applied what the cluster's leader had
     * applied when the member came back: a restart is over once the member has replayed its
     * backlog (until then it counts the killed leader's term as current and refuses to pre-vote
     * for a new one, so a kill in that window is a second failure, not the next round).
     */
    private static void awaitCaughtUp(final ProcessCluster cluster, final String id, final int groups) throws InterruptedException
    {
        for (int g = 0; g < groups; g++)
        {
            final String leader = cluster.awaitLeader(null, g);
            if (leader.equals(id))
            {
                continue; // led by the restarted member again (handed back): a leader holds every committed entry
            }
            final long target = cluster.appliedIndex(leader, g);
            final int group = g;
            Await.until(id + " to catch up to index " + target + " of group " + g, Duration.ofSeconds(60),
                () -> cluster.appliedIndex(id, group) >= target);
        }
    }

    /** Waits (up to 60 s) until the restarted member answers STATUS as a member again. */
    private static void awaitMember(final ProcessCluster cluster, final String id) throws InterruptedException
    {
        Await.until(id + " to answer STATUS as a member again", Duration.ofSeconds(60), () ->
        {
            final String role = cluster.role(id);
            return "FOLLOWER".equals(role) || "LEADER".equals(role);
        });
    }
}
