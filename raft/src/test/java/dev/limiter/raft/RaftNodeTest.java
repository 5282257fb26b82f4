package dev.limiter.raft;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Three real Ratis members on loopback, in one JVM, with storage in temp directories. */
@Timeout(120)
class RaftNodeTest
{
    @TempDir
    Path dir;

    private final Map<String, InetSocketAddress> peers = new LinkedHashMap<>();
    private final Map<String, RaftNode> nodes = new LinkedHashMap<>();
    private final Map<String, RecordingStateMachine> machines = new LinkedHashMap<>();
    /** Multi-group tests: every group's state machine on each node (group 0's is also in machines). */
    private final Map<String, List<RecordingStateMachine>> groupMachines = new LinkedHashMap<>();
    private long snapshotEvery = 10_000;
    private boolean memoryFirst;
    private int groupCount = 1;
    private Duration electionTimeout = RaftNodeConfig.DEFAULT_ELECTION_TIMEOUT_MIN;
    /** Runs the disk half of every member's snapshots; null: each node's own writer thread. */
    private Executor snapshotWrites;

    static
    {
        // Ratis ends the JVM when a member cannot start its gRPC server: here that is a failed test instead.
        org.apache.ratis.util.ExitUtils.disableSystemExit();
    }

    @AfterEach
    void stopAll() throws IOException, InterruptedException
    {
        // At the same time: closing a member takes about a second (each group's log worker polls its
        // queue with a one-second timeout, and Ratis waits for it to notice the close).
        final List<Thread> closing = new ArrayList<>();
        final List<IOException> failures = new CopyOnWriteArrayList<>();
        for (final RaftNode node : nodes.values())
        {
            final Thread thread = new Thread(() ->
            {
                try
                {
                    node.close();
                }
                catch (final IOException e)
                {
                    failures.add(e);
                }
            }, "closing-member");
            thread.start();
            closing.add(thread);
        }
        for (final Thread thread : closing)
        {
            thread.join();
        }
        if (!failures.isEmpty())
        {
            throw failures.get(0);
        }
        final org.apache.ratis.util.ExitUtils.ExitException exit = org.apache.ratis.util.ExitUtils.getFirstExitException();
        org.apache.ratis.util.ExitUtils.clear();
        assertTrue(exit == null || leaderThreadRacedItsClose(exit), "Ratis would have ended the JVM: " + exit);
    }

    /**
     * A race inside Ratis 3.2 when a leading member is closed: its leader thread may still look at
     * the log the close has just closed ({@code LeaderStateImpl.checkPeersForYieldingLeader},
     * "SegmentedRaftLog is expected to be opened but it is CLOSED"), and Ratis ends the JVM for
     * that uncaught exception. It can only happen once the member's log is closed, that is while the
     * member is being stopped, so it is no failure of what a test checks (seen once in a clean-clone
     * run on 2026-12-06).
     */
    private static boolean leaderThreadRacedItsClose(final org.apache.ratis.util.ExitUtils.ExitException exit)
    {
        return exit.getCause() instanceof IllegalStateException closed && closed.getMessage() != null &&
            closed.getMessage().endsWith("SegmentedRaftLog is expected to be opened but it is CLOSED");
    }

    /** Ports {@link #freePort} has handed out in this JVM: never handed out twice. */
    private static final java.util.Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * A free port below the kernel's ephemeral range: one from that range (port 0) can be taken by an
     * outgoing connection of the members before a member restarted in place binds it again. Each is
     * handed out once: two members of a cluster (or a member of an earlier test still letting go of
     * its port) never share one (a clean-clone run once waited 10 s for a port that was in use).
     */
    private static int freePort() throws IOException
    {
        int low = 32_768;
        try
        {
            low = Math.max(12_000, Integer.parseInt(java.nio.file.Files.readString(
                java.nio.file.Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim().split("\\s+")[0]));
        }
        catch (final IOException | RuntimeException e)
        {
            // keep the usual Linux default
        }
        while (true)
        {
            final int port = 10_000 + java.util.concurrent.ThreadLocalRandom.current().nextInt(low - 10_001);
            if (!HANDED_OUT.add(port))
            {
                continue;
            }
            try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress()))
            {
                return socket.getLocalPort();
            }
            catch (final IOException taken)
            {
                // another one
            }
        }
    }

    private void startCluster() throws IOException
    {
        for (final String id : List.of("n1", "n2", "n3"))
        {
            peers.put(id, new InetSocketAddress("127.0.0.1", freePort()));
        }
        for (final String id : peers.keySet())
        {
            start(id);
        }
    }

    private RaftNode start(final String id) throws IOException
    {
        final List<RecordingStateMachine> groupsOfNode = new ArrayList<>();
        for (int g = 0; g < groupCount; g++)
        {
            groupsOfNode.add(new RecordingStateMachine());
        }
        final RaftNode node = new RaftNode(new RaftNodeConfig().nodeId(id).peers(peers).storageDir(dir.resolve(id))
            .snapshotEveryEntries(snapshotEvery).logSegmentBytes(4096).snapshotChunkBytes(1024).memoryFirst(memoryFirst)
            .electionTimeoutMin(electionTimeout), groupsOfNode,
            snapshotWrites).start();
        nodes.put(id, node);
        machines.put(id, groupsOfNode.get(0));
        groupMachines.put(id, groupsOfNode);
        return node;
    }

    private void stop(final String id) throws IOException
    {
        nodes.remove(id).close();
    }

    private static void await(final String what, final Duration timeout, final BooleanSupplier condition) throws InterruptedException
    {
        final long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() > end)
            {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    private RaftNode leader() throws InterruptedException
    {
        final RaftNode[] found = new RaftNode[1];
        await("a leader", Duration.ofSeconds(15), () ->
        {
            for (final RaftNode node : nodes.values())
            {
                if (node.group(0).isLeader())
                {
                    found[0] = node;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    private static long submit(final RaftNode node, final int value)
    {
        return node.group(0).submit(ByteBuffer.allocate(4).putInt(0, value)).join().getLong(0);
    }

    private List<CompletableFuture<ByteBuffer>> submitMany(final RaftNode node, final int from, final int count)
    {
        final List<CompletableFuture<ByteBuffer>> futures = new ArrayList<>();
        for (int i = from; i < from + count; i++)
        {
            futures.add(node.group(0).submit(ByteBuffer.allocate(4).putInt(0, i)));
        }
        return futures;
    }

    private void awaitConverged(final long entries) throws InterruptedException
    {
        await("every member to apply " + entries + " entries", Duration.ofSeconds(30), () ->
            machines.entrySet().stream().filter(e -> nodes.containsKey(e.getKey()))
                .allMatch(e -> e.getValue().applied >= entries));
        final long digest = machines.get(nodes.keySet().iterator().next()).digest;
        for (final String id : nodes.keySet())
        {
            assertEquals(digest, machines.get(id).digest, "digest of " + id);
        }
    }

    @Test
    void everyMemberAppliesTheSameEntriesInTheSameOrderWithNonDecreasingClusterTime() throws Exception
    {
        startCluster();
        nodes.values().forEach(node -> assertFalse(node.acknowledgesBeforeSync(), node.nodeId() + ": a sync per entry unless memory-first"));
        nodes.values().forEach(node -> assertEquals(0, node.appenderWaitMinNanos(), node.nodeId() + ": appends are not spaced out"));
        nodes.values().forEach(node -> assertArrayEquals(new long[] {150, 300, 1000}, node.electionTimingMillis(),
            node.nodeId() + ": elections after 150-300 ms by default, a step-down wait of 1 s"));
        final RaftNode leader = leader();
        submitMany(leader, 0, 300).forEach(CompletableFuture::join);
        awaitConverged(300);
        // Ratis' request pool (threads named "<node>-client...") is started only for a request
        // handed over through the server; the leader's division takes ours on the submitting thread.
        assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().startsWith(leader.nodeId() + "-client")),
            "entries are handed to Ratis on the submitting thread, not through Ratis' request pool");
        for (final RecordingStateMachine machine : machines.values())
        {
            final List<Long> stamps = new ArrayList<>(machine.stamps);
            for (int i = 1; i < stamps.size(); i++)
            {
                assertTrue(stamps.get(i) >= stamps.get(i - 1), "cluster time went backwards at entry " + i);
            }
        }
    }

    @Test
    void aFollowerRefusesToDecideAndNamesTheLeader() throws Exception
    {
        startCluster();
        final RaftNode leader = leader();
        submit(leader, 1); // the followers learn who leads
        final RaftNode follower = nodes.values().stream().filter(n -> n != leader).findFirst().orElseThrow();
        await("the follower to know the leader", Duration.ofSeconds(10), () -> leader.nodeId().equals(follower.group(0).leaderId()));
        final CompletionException e = assertThrows(CompletionException.class,
            () -> follower.group(0).submit(ByteBuffer.allocate(4)).join());
        assertTrue(e.getCause() instanceof NotLeaderException, String.valueOf(e.getCause()));
        assertEquals(leader.nodeId(), ((NotLeaderException)e.getCause()).leaderHint());
    }

    @Test
    void aNewLeaderContinuesTheClusterClockWithoutCreditingTheElectionGap() throws Exception
    {
        startCluster();
        final RaftNode first = leader();
        final long before = submit(first, 1);
        awaitConverged(1);
        final long killedAt = System.nanoTime();
        stop(first.nodeId());
        final RaftNode second = leader();
        assertNotEquals(first.nodeId(), second.nodeId());
        Thread.sleep(500); // more wall time passes before anyone asks
        final long after = submit(second, 2);
        final long wallGap = System.nanoTime() - killedAt;
        assertTrue(after > before, "cluster time moves forward across a failover");
        assertTrue(after - before < TimeUnit.MILLISECONDS.toNanos(100),
            "the new leader's clock continues from the last stamp: +" + (after - before) / 1_000_000 + " ms of cluster time for " +
            wallGap / 1_000_000 + " ms of wall time");
    }

    @Test
    void aStoppedFollowerCatchesUpByReplayAndAfterCompactionByASnapshotSentInManyChunks() throws Exception
    {
        snapshotEvery = 50;
        startCluster();
        final RaftNode leader = leader();
        submitMany(leader, 0, 20).forEach(CompletableFuture::join);
        final String followerId = nodes.keySet().stream().filter(id -> !id.equals(leader.nodeId())).findFirst().orElseThrow();

        // Short absence: the log still holds what it missed.
        stop(followerId);
        submitMany(leader, 20, 10).forEach(CompletableFuture::join);
        RaftNode follower = start(followerId);
        awaitConverged(30);
        assertEquals(0, follower.group(0).snapshotsInstalled(), "caught up by log replay, not a snapshot");

        // Long absence: the leader snapshots and purges the log past what the follower has.
        stop(followerId);
        submitMany(leader, 30, 400).forEach(CompletableFuture::join);
        // A snapshot of everything applied: 430, far past the follower's 30 or so. (Ratis once answered
        // with the latest snapshot it knew of, 88 in a full build, when newer writes were not reported yet.)
        final long snapshotIndex = leader.group(0).snapshot().join();
        assertTrue(snapshotIndex >= 300, "a snapshot far past what the stopped follower holds: " + snapshotIndex);
        follower = start(followerId);
        final RaftNode rejoined = follower;
        await("the follower to receive a snapshot", Duration.ofSeconds(30), () -> rejoined.group(0).snapshotsInstalled() > 0);
        awaitConverged(430);
    }

    @Test
    void entriesKeepApplyingWhileASnapshotIsWrittenToDiskAndItsIndexIsReportedOnceWritten() throws Exception
    {
        snapshotEvery = 20;
        final List<Runnable> heldWrites = new CopyOnWriteArrayList<>();
        final AtomicBoolean holding = new AtomicBoolean(true);
        snapshotWrites = write ->
        {
            if (holding.get())
            {
                heldWrites.add(write);
            }
            else
            {
                new Thread(write, "test-snapshot-write").start();
            }
        };
        startCluster();
        final RaftNode leader = leader();
        submitMany(leader, 0, 25).forEach(CompletableFuture::join);
        await("every member to copy its state for a snapshot", Duration.ofSeconds(30), () -> heldWrites.size() == 3);

        // The files are not written yet: the log keeps committing and applying past the snapshot point.
        submitMany(leader, 25, 100).forEach(CompletableFuture::join);
        awaitConverged(125);
        assertEquals(3, heldWrites.size(), "one copy per member while its write is pending, not one per apply");
        for (final RaftNode node : nodes.values())
        {
            assertEquals(0, node.group(0).snapshotsTaken(), "no snapshot is on disk while its write is held");
        }

        holding.set(false);
        heldWrites.forEach(Runnable::run);
        // Written, not yet reported to Ratis (it learns of a write at its next apply): an explicit
        // snapshot is still one of everything applied, not the older one Ratis knows of.
        final long applied = leader.group(0).lastAppliedIndex();
        final long explicit = leader.group(0).snapshot().get(10, TimeUnit.SECONDS);
        assertTrue(explicit >= applied, "a snapshot of everything applied (" + applied + "), was " + explicit);
        submit(leader, 125); // Ratis asks again after its next apply and learns the written index
        await("every member to report its snapshot", Duration.ofSeconds(30), () ->
            nodes.values().stream().allMatch(n -> n.group(0).snapshotsTaken() >= 1 && n.group(0).lastSnapshotBytes() > 0));
        final long index = leader.group(0).snapshot().get(10, TimeUnit.SECONDS);
        assertTrue(index >= 19, "a snapshot at or past the first trigger point (the 20th entry, index 19): " + index);
        // More snapshots, and segments they cover: each got a second name before Ratis purged it, and
        // the snapshot writer freed it once Ratis had deleted its own name. (The latest snapshot's
        // segments may still be linked: Ratis purges them once it learns that index, at its next apply.)
        submitMany(leader, 126, 200).forEach(CompletableFuture::join);
        final int[] trickle = {326};
        await("every member to free the segments Ratis purged", Duration.ofSeconds(30), () ->
        {
            final boolean freed = nodes.values().stream().allMatch(n -> n.group(0).purgedSegmentsFreed() > 0)
                && nodes.keySet().stream().allMatch(id -> trashHoldsOnlySegmentsTheLogStillHas(dir.resolve(id)));
            if (!freed)
            {
                // Ratis purges what a written snapshot covers at its next apply, and a segment's
                // second name goes with the next snapshot write: a burst that ended while the
                // writes were pending needs entries after it.
                submit(leader, trickle[0]++);
            }
            return freed;
        });
    }

    /** No space is held for a segment Ratis has deleted: every name in the trash is still in the log. */
    private static boolean trashHoldsOnlySegmentsTheLogStillHas(final Path nodeDir)
    {
        try
        {
            final Path trash = directoryNamed(nodeDir, StampedStateMachine.PURGED_SEGMENTS_DIR);
            if (trash == null)
            {
                return false; // no segment was ever linked
            }
            final Path log = trash.resolveSibling("current");
            try (java.util.stream.Stream<Path> names = java.nio.file.Files.list(trash))
            {
                return names.allMatch(name -> java.nio.file.Files.exists(log.resolve(name.getFileName())));
            }
        }
        catch (final IOException e)
        {
            return false;
        }
    }

    /** The first directory called {@code name} under a node's storage (a group's {@code sm}, say), or null. */
    private static Path directoryNamed(final Path nodeDir, final String name) throws IOException
    {
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(nodeDir))
        {
            return files.filter(p -> p.getFileName().toString().equals(name)).findFirst().orElse(null);
        }
    }

    @Test
    void aFailedSnapshotWriteKeepsTheLogAndIsNotRetriedOnEveryApply() throws Exception
    {
        snapshotsFailAndTheMembersKeepApplying(machine -> machine.failWrites = true);
    }

    @Test
    void noMemoryForASnapshotsCopyKeepsTheMembersApplyingAndIsNotRetriedOnEveryApply() throws Exception
    {
        snapshotsFailAndTheMembersKeepApplying(machine ->
            machine.captureFailure = new OutOfMemoryError("Cannot reserve 1048576 bytes of direct buffer memory (test)"));
    }

    @Test
    void aClassGoneFromARewrittenJarKeepsTheMembersApplyingAndIsNotRetriedOnEveryApply() throws Exception
    {
        // Thrown to Ratis, its updater retried the snapshot in a tight loop (590,000 logged stacks in 90 s).
        snapshotsFailAndTheMembersKeepApplying(machine ->
            machine.captureFailure = new NoClassDefFoundError("dev/limiter/protocol/policy/PolicyStateSnapshot (test)"));
    }

    private void snapshotsFailAndTheMembersKeepApplying(final java.util.function.Consumer<RecordingStateMachine> failure)
        throws Exception
    {
        snapshotEvery = 20;
        startCluster();
        final RaftNode leader = leader();
        machines.values().forEach(failure);
        submitMany(leader, 0, 25).forEach(CompletableFuture::join);
        await("every member to try a snapshot", Duration.ofSeconds(30), () ->
            machines.values().stream().allMatch(machine -> machine.captures.get() >= 1));
        for (int i = 0; i < 10; i++) // many applies past the threshold, each a chance to try again
        {
            submitMany(leader, 25 + i * 10, 10).forEach(CompletableFuture::join);
        }
        awaitConverged(125);
        for (final String id : nodes.keySet())
        {
            final int captures = machines.get(id).captures.get();
            assertTrue(captures <= 2, "one try, then 10 s before the next (not one per apply): " + captures + " on " + id);
            assertEquals(0, nodes.get(id).group(0).snapshotsTaken(), "nothing written: " + id);
        }
    }

    @Test
    void aSnapshotWriteCutShortLeavesNothingBehindOnceTheMemberStartsAgain() throws Exception
    {
        startCluster();
        final RaftNode leader = leader();
        submitMany(leader, 0, 10).forEach(CompletableFuture::join);
        final String followerId = nodes.keySet().stream().filter(id -> !id.equals(leader.nodeId())).findFirst().orElseThrow();
        stop(followerId);
        final Path stateMachineDir = directoryNamed(dir.resolve(followerId), "sm");
        assertNotNull(stateMachineDir);
        final Path unfinished = java.nio.file.Files.write(stateMachineDir.resolve("snapshot.1_5" + StampedStateMachine.UNFINISHED_SUFFIX),
            new byte[4096]); // as a node killed in the middle of a snapshot write leaves it
        start(followerId);
        awaitConverged(10);
        assertFalse(java.nio.file.Files.exists(unfinished), "the unfinished write was removed at start");
    }

    @Test
    void aLongerElectionTimeoutReachesRatisAndNoMemberCampaignsBeforeItHasPassedSinceTheLeaderStopped() throws Exception
    {
        electionTimeout = Duration.ofMillis(700);
        startCluster();
        for (final RaftNode node : nodes.values())
        {
            assertArrayEquals(new long[] {700, 1400, 1400}, node.electionTimingMillis(),
                node.nodeId() + ": elections after 700-1400 ms, and a leader steps down after no shorter a pause than that");
            assertEquals(675, node.config().leaderLeaseMillis(),
                "the leader lease is the minimum less the 25 ms round-trip allowance");
        }
        final RaftNode leader = leader();
        submitMany(leader, 0, 50).forEach(CompletableFuture::join);
        awaitConverged(50);
        // Neither follower may campaign for 700 ms after it last heard from the leader, which was just
        // before its close began (the commit of the entries above, or a heartbeat: allow 100 ms).
        // With the default of 150 ms one leads again about 365 ms after the close began. The close
        // runs beside the wait: it takes about a second by itself.
        final long stopped = System.nanoTime();
        final RaftNode old = nodes.remove(leader.nodeId());
        final CompletableFuture<Void> closed = CompletableFuture.runAsync(() ->
        {
            try
            {
                old.close();
            }
            catch (final IOException e)
            {
                throw new CompletionException(e);
            }
        });
        final RaftNode next = leader();
        final long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopped);
        closed.join();
        assertTrue(elapsedMillis >= 600, "a new leader only after the election timeout: " + elapsedMillis + " ms");
        submitMany(next, 50, 10).forEach(CompletableFuture::join);
    }

    @Test
    void memoryFirstMembersCommitApplyAndRecoverTheirLogsAfterARestart() throws Exception
    {
        memoryFirst = true;
        startCluster();
        nodes.values().forEach(node -> assertTrue(node.acknowledgesBeforeSync(), node.nodeId() + " runs memory-first"));
        final RaftNode leader = leader();
        submitMany(leader, 0, 200).forEach(CompletableFuture::join);
        awaitConverged(200);
        // A follower stopped and started again reads back what it acknowledged from its own log
        // (the kernel held it; the background sync wrote it), then takes the entries it missed.
        final String follower = nodes.keySet().stream().filter(id -> !id.equals(leader.nodeId())).findFirst().orElseThrow();
        stop(follower);
        submitMany(leader, 200, 100).forEach(CompletableFuture::join);
        start(follower);
        awaitConverged(300);
        final long digest = machines.get(leader.nodeId()).digest;
        for (final RecordingStateMachine machine : machines.values())
        {
            assertEquals(digest, machine.digest, "every member applied the same 300 entries");
        }
    }

    @Test
    void aWholeClusterRestartRecoversTheStateFromDisk() throws Exception
    {
        snapshotEvery = 100;
        startCluster();
        RaftNode leader = leader();
        submitMany(leader, 0, 250).forEach(CompletableFuture::join);
        awaitConverged(250);
        final long digest = machines.get(leader.nodeId()).digest;
        final long lastStamp = leader.group(0).lastAppliedClusterNanos();
        for (final String id : new ArrayList<>(nodes.keySet()))
        {
            stop(id);
        }
        for (final String id : peers.keySet())
        {
            start(id);
        }
        leader = leader();
        final RaftNode restarted = leader;
        await("the restarted leader to re-apply its state", Duration.ofSeconds(30),
            () -> restarted.group(0).lastAppliedClusterNanos() >= lastStamp);
        final long next = submit(leader, 9999);
        assertTrue(next > lastStamp, "cluster time after a restart continues after the last stamp");
        assertTrue(next - lastStamp < TimeUnit.MILLISECONDS.toNanos(100), "and does not credit the downtime");
        await("every member to apply the new entry", Duration.ofSeconds(30), () ->
            nodes.values().stream().allMatch(n -> n.group(0).lastAppliedClusterNanos() >= next));
        assertNotNull(leader.group(0).leaderId());
        final long restoredDigest = machines.get(leader.nodeId()).digest;
        for (final RecordingStateMachine machine : machines.values())
        {
            assertEquals(restoredDigest, machine.digest, "replicas agree after a restart");
        }
        assertNotEquals(digest, restoredDigest, "the new entry was applied on top of the recovered state");
    }

    private String leaderOf(final int g)
    {
        for (final RaftNode node : nodes.values())
        {
            if (node.group(g).isLeader())
            {
                return node.nodeId();
            }
        }
        return null;
    }

    /** Each group prefers one member (round robin over the sorted ids): n1 leads 0, n2 leads 1, n3 leads 2. */
    private void awaitSpreadLeaders() throws InterruptedException
    {
        await("each member to lead the group it is preferred for", Duration.ofSeconds(30), () ->
            "n1".equals(leaderOf(0)) && "n2".equals(leaderOf(1)) && "n3".equals(leaderOf(2)));
    }

    @Test
    void severalGroupsEachHaveTheirOwnLogAndTheirLeadersAreSpreadOverTheMembers() throws Exception
    {
        groupCount = 3;
        startCluster();
        awaitSpreadLeaders();
        for (int g = 0; g < 3; g++)
        {
            final RaftNode leader = nodes.get(leaderOf(g));
            for (int i = 0; i < 10 * (g + 1); i++)
            {
                leader.group(g).submit(ByteBuffer.allocate(4).putInt(0, g * 1000 + i)).join();
            }
        }
        for (int g = 0; g < 3; g++)
        {
            final int group = g;
            await("group " + g + " to apply its entries everywhere", Duration.ofSeconds(30), () ->
                groupMachines.values().stream().allMatch(list -> list.get(group).applied == 10L * (group + 1)));
            final long digest = groupMachines.get("n1").get(g).digest;
            for (final List<RecordingStateMachine> list : groupMachines.values())
            {
                assertEquals(digest, list.get(g).digest, "group " + g + " is the same on every member");
            }
        }
        // A member that does not lead a group refuses to submit to it and names its leader.
        final CompletionException e = assertThrows(CompletionException.class,
            () -> nodes.get("n1").group(1).submit(ByteBuffer.allocate(4)).join());
        assertEquals("n2", ((NotLeaderException)e.getCause()).leaderHint());
    }

    @Test
    void leadershipOfAGroupMovesOnWhenItsLeaderDiesAndReturnsOnceItIsBack() throws Exception
    {
        groupCount = 3;
        startCluster();
        awaitSpreadLeaders();
        nodes.get("n2").group(1).submit(ByteBuffer.allocate(4).putInt(0, 7)).join();
        stop("n2");
        await("group 1 to elect another leader", Duration.ofSeconds(30), () -> leaderOf(1) != null);
        final String standIn = leaderOf(1);
        assertNotEquals("n2", standIn);
        nodes.get(standIn).group(1).submit(ByteBuffer.allocate(4).putInt(0, 8)).join();
        start("n2");
        await("group 1's leadership to return to n2", Duration.ofSeconds(30), () -> "n2".equals(leaderOf(1)));
        await("n2 to hold both of group 1's entries", Duration.ofSeconds(30), () -> groupMachines.get("n2").get(1).applied == 2);
        assertEquals("n1", leaderOf(0));
        assertEquals("n3", leaderOf(2));
    }

    @Test
    void aNodeRefusesADataDirectoryWrittenWithAnotherNumberOfGroups() throws Exception
    {
        groupCount = 2;
        startCluster();
        await("a leader of group 1", Duration.ofSeconds(30), () -> leaderOf(1) != null);
        stop("n3");
        groupCount = 3;
        final IOException e = assertThrows(IOException.class, () -> start("n3"));
        assertTrue(e.getMessage().contains("holds 2 Raft group(s)") && e.getMessage().contains("runs 3"), e.getMessage());
    }
}
