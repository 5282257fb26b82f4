package dev.limiter.server.cluster;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.raft.ReplicatedStateMachine;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.KeyHash;
import dev.limiter.protocol.Verdict;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The committed tables of one Raft group among several: a group owns its shards only, only the
 * control group carries policies, and a decision replayed in another group waits for the policy
 * version it was made under when its own log got ahead of the control group's.
 */
@Timeout(30)
class ReplicatedBucketsTest
{
    private static final long T0 = 1_796_000_000_000L;
    private static final long SECOND = 1_000_000_000L;

    private final BucketTable[] committed = {table(), table()};
    private final PolicyState policies = new PolicyState();
    private final ReplicatedBuckets control = new ReplicatedBuckets(committed, new int[] {0}, true, policies, "n1");
    private final ReplicatedBuckets other = new ReplicatedBuckets(committed, new int[] {1}, false, policies, "n1");

    private BucketTable table()
    {
        return new BucketTable(1000, 64_000, ordinal -> policies.latestRate(ordinal), true);
    }

    private static Policy orders(final long burst)
    {
        return Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
            .setRate(1).setBurst(burst).setOwner("team-orders").setReason("test").build();
    }

    private void bootstrap() throws Exception
    {
        final PolicySet.Builder file = PolicySet.newBuilder();
        JsonFormat.parser().merge("{\"version\":1,\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"infra\"}}", file);
        control.apply(1, 0, PolicyEntry.encode(PolicyState.command("n1", T0).setBootstrap(file).build()));
        control.apply(2, 0, PolicyEntry.encode(PolicyState.command("alice", T0).setPut(orders(10)).build()));
    }

    /** A DECISIONS entry for {@code shard}: {@code count} decisions of cost 1 for one tenant under ordinal/version. */
    private static ByteBuffer decisions(final int shard, final int ordinal, final int version, final int count)
    {
        final byte[] bytes = new byte[4096];
        final ByteBuffer view = ByteBuffer.wrap(bytes);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[64]);
        BucketKeys.putPrefix(key, 0, ordinal, version);
        final byte[] tenant = "acme".getBytes(StandardCharsets.UTF_8);
        key.putBytes(6, tenant);
        int at = DecisionsEntry.HEADER;
        for (int i = 0; i < count; i++)
        {
            DecisionsEntry.putRecord(view, bytes, at, ordinal, 1, SECOND + i, key, 0, 6 + tenant.length);
            at += DecisionsEntry.recordLength(6 + tenant.length);
        }
        DecisionsEntry.putHeader(view, shard, count, 0);
        return ByteBuffer.wrap(bytes, 0, at).slice();
    }

    private int ordersOrdinal()
    {
        return policies.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().ordinal();
    }

    @Test
    void aDecisionAheadOfItsPolicyVersionWaitsForTheControlGroupToApplyIt() throws Exception
    {
        bootstrap();
        final int ordinal = ordersOrdinal();
        final AtomicReference<Thread> applier = new AtomicReference<>();
        final CompletableFuture<Void> applied = CompletableFuture.runAsync(() ->
        {
            applier.set(Thread.currentThread());
            other.apply(1, SECOND, decisions(1, ordinal, 2, 3)); // version 2 is not applied yet
        });
        // Wait for the apply to block on the missing version (not a timed guess: its thread's state).
        while (applier.get() == null || applier.get().getState() != Thread.State.TIMED_WAITING)
        {
            assertFalse(applied.isDone(), "replayed a decision under a version this replica did not have");
            Thread.onSpinWait();
        }
        assertEquals(0, other.appliedDecisions());
        control.apply(3, 0, PolicyEntry.encode(PolicyState.command("alice", T0 + 1).setPut(orders(20)).build()));
        applied.get();
        assertEquals(3, other.appliedDecisions(), "replayed under version 2 once the control group applied it");
        assertEquals(1, committed[1].publishedSize());
    }

    private static ByteBuffer joined(final ByteBuffer... sections)
    {
        final ByteBuffer entry = ByteBuffer.allocate(java.util.Arrays.stream(sections).mapToInt(ByteBuffer::remaining).sum());
        for (final ByteBuffer section : sections)
        {
            entry.put(section.duplicate());
        }
        return entry.flip();
    }

    @Test
    void anEntryJoiningTheBatchesOfSeveralShardsAppliesEachToItsOwnShard() throws Exception
    {
        final BucketTable[] three = {table(), table(), table()};
        final ReplicatedBuckets group = new ReplicatedBuckets(three, new int[] {0, 2}, true, policies, "n1");
        group.apply(1, 0, PolicyEntry.encode(PolicyState.command("n1", T0).setBootstrap(PolicySet.newBuilder().setVersion(1)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("infra"))).build()));
        group.apply(2, 0, PolicyEntry.encode(PolicyState.command("alice", T0).setPut(orders(10)).build()));
        final int ordinal = ordersOrdinal();

        group.apply(3, SECOND, joined(decisions(2, ordinal, 1, 3), decisions(0, ordinal, 1, 2)));

        assertEquals(5, group.appliedDecisions());
        assertEquals(1, three[0].publishedSize());
        assertEquals(1, three[2].publishedSize());
        assertEquals(0, three[1].publishedSize(), "a shard no section named");
    }

    @Test
    void anEntryWithOneSectionOfAShardTheGroupDoesNotOwnIsRefusedWhole() throws Exception
    {
        bootstrap();
        final int ordinal = ordersOrdinal();
        final IllegalStateException refused = assertThrows(IllegalStateException.class,
            () -> other.apply(1, SECOND, joined(decisions(1, ordinal, 1, 2), decisions(0, ordinal, 1, 1))));
        assertTrue(refused.getMessage().contains("shard 0"), refused.getMessage());
        assertEquals(0, other.appliedDecisions(), "the section of its own shard was not applied either");
        assertEquals(0, committed[1].publishedSize());
    }

    @Test
    void aGroupRefusesEntriesThatBelongToAnotherGroup() throws Exception
    {
        bootstrap();
        final IllegalStateException shard = assertThrows(IllegalStateException.class,
            () -> other.apply(1, SECOND, decisions(0, ordersOrdinal(), 1, 1)));
        assertTrue(shard.getMessage().contains("does not own") && shard.getMessage().contains("--raft-groups"), shard.getMessage());
        final IllegalStateException policy = assertThrows(IllegalStateException.class,
            () -> other.apply(2, SECOND, PolicyEntry.encode(PolicyState.command("alice", T0).setPut(orders(5)).build())));
        assertTrue(policy.getMessage().contains("does not carry policies"), policy.getMessage());
    }

    @Test
    void aGroupsSnapshotHoldsItsOwnShardsAndOnlyTheControlGroupsHoldsPolicies() throws Exception
    {
        bootstrap();
        other.apply(3, SECOND, decisions(1, ordersOrdinal(), 1, 4));
        final ByteArrayOutputStream otherSnapshot = snapshotOf(other);
        final ByteArrayOutputStream controlSnapshot = snapshotOf(control);
        assertTrue(otherSnapshot.size() < controlSnapshot.size(), "no policies in another group's snapshot");

        // A fresh replica: the control group restores the policies, the other group its shard.
        final PolicyState freshPolicies = new PolicyState();
        final BucketTable[] freshTables = {table(), table()};
        final ReplicatedBuckets freshControl = new ReplicatedBuckets(freshTables, new int[] {0}, true, freshPolicies, "n2");
        final ReplicatedBuckets freshOther = new ReplicatedBuckets(freshTables, new int[] {1}, false, freshPolicies, "n2");
        freshControl.restoreSnapshot(new ByteArrayInputStream(controlSnapshot.toByteArray()));
        freshOther.restoreSnapshot(new ByteArrayInputStream(otherSnapshot.toByteArray()));
        assertEquals(policies.index().size(), freshPolicies.index().size());
        assertEquals(1, freshTables[1].publishedSize());
        assertEquals(other.digest(), freshOther.digest());
        assertEquals(4, freshOther.appliedDecisions());

        // A group of another size refuses the snapshot instead of misplacing buckets.
        final ReplicatedBuckets wider = new ReplicatedBuckets(new BucketTable[] {table(), table()}, new int[] {0, 1}, false,
            new PolicyState(), "n3");
        final IOException e = assertThrows(IOException.class, () -> wider.restoreSnapshot(new ByteArrayInputStream(otherSnapshot.toByteArray())));
        assertTrue(e.getMessage().contains("--raft-groups"), e.getMessage());
    }
    @Test
    void aGroupsCopyOfItsRegionsSharesOnlyMovesForwardSurvivesItsSnapshotAndIsNotTheControlGroups() throws Exception
    {
        final int[] told = {0};
        other.onRegionShares(() -> told[0]++);
        assertEquals(0, other.regionShares().getGeneration(), "no copy yet");
        other.apply(1, SECOND, RegionSharesEntry.encode(shares(2, 950_000)));
        assertEquals(shares(2, 950_000), other.regionShares());
        // A leader that copied from an older state of the control group changes nothing.
        other.apply(2, SECOND, RegionSharesEntry.encode(shares(1, 50_000)));
        assertEquals(shares(2, 950_000), other.regionShares());
        assertEquals(1, told[0]);
        other.apply(3, SECOND, RegionSharesEntry.encode(shares(3, 50_000)));
        assertEquals(shares(3, 50_000), other.regionShares());
        assertEquals(2, told[0]);

        // A replica that catches up from the group's snapshot holds the same copy.
        final ReplicatedBuckets fresh = new ReplicatedBuckets(new BucketTable[] {table(), table()}, new int[] {1}, false, new PolicyState(), "n2");
        fresh.restoreSnapshot(new ByteArrayInputStream(snapshotOf(other).toByteArray()));
        assertEquals(shares(3, 50_000), fresh.regionShares());

        // The control group holds the shares themselves: a copy in its log is refused.
        final IllegalStateException refused = assertThrows(IllegalStateException.class,
            () -> control.apply(4, SECOND, RegionSharesEntry.encode(shares(4, 1))));
        assertTrue(refused.getMessage().contains("control group"), refused.getMessage());

        // A replica about to replay its log from the start forgets the copy with the rest.
        other.reset();
        assertEquals(0, other.regionShares().getGeneration());
    }

    private static RegionShares shares(final long generation, final int orders)
    {
        return RegionShares.newBuilder().setGeneration(generation).putSharePpm("orders", orders).build();
    }

    @Test
    void aSnapshotHoldsTheStateAsCapturedEvenWhenEntriesApplyBeforeItIsWritten() throws Exception
    {
        bootstrap();
        other.apply(3, SECOND, decisions(1, ordersOrdinal(), 1, 4));
        final long capturedDigest = other.digest();
        final ByteArrayOutputStream written = new ByteArrayOutputStream();
        try (ReplicatedStateMachine.CapturedState captured = other.captureSnapshot())
        {
            other.apply(4, 2 * SECOND, decisions(1, ordersOrdinal(), 1, 3)); // applied while the snapshot waits for its writer
            assertNotEquals(capturedDigest, other.digest());
            final Thread writer = new Thread(() -> // written from another thread, as the node's snapshot writer does
            {
                try
                {
                    captured.writeTo(written);
                }
                catch (final IOException e)
                {
                    throw new UncheckedIOException(e);
                }
            });
            writer.start();
            writer.join();
        }
        final BucketTable[] freshTables = {table(), table()};
        final ReplicatedBuckets fresh = new ReplicatedBuckets(freshTables, new int[] {1}, false, new PolicyState(), "n2");
        fresh.restoreSnapshot(new ByteArrayInputStream(written.toByteArray()));
        assertEquals(capturedDigest, fresh.digest(), "the buckets as they were at the capture");
        assertEquals(4, fresh.appliedDecisions());
    }

    private static ByteArrayOutputStream snapshotOf(final ReplicatedBuckets group) throws IOException
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ReplicatedStateMachine.CapturedState captured = group.captureSnapshot())
        {
            captured.writeTo(out);
        }
        return out;
    }

    /** A stacked GLOBAL budget, or a GLOBAL policy with splitAcrossShards: the same shares, replayed alike. */
    @ParameterizedTest(name = "stacked {0}")
    @ValueSource(booleans = {true, false})
    void aBudgetSplitAcrossShardsIsReplayedAtTheShareOfEachSectionsShard(final boolean stacked) throws Exception
    {
        final PolicyState twoShards = new PolicyState(2);
        final BucketTable[] tables = {table(), table()};
        final ReplicatedBuckets group = new ReplicatedBuckets(tables, new int[] {0, 1}, true, twoShards, "n1");
        final PolicySet.Builder file = PolicySet.newBuilder();
        JsonFormat.parser().merge("{\"version\":1,\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"infra\"}}", file);
        group.apply(1, 0, PolicyEntry.encode(PolicyState.command("n1", T0).setBootstrap(file).build()));
        // 11 tokens, 1 a second, split over two shards: 6 on shard 0 and 5 on shard 1, each refilling at 1 per 2 s.
        final Policy capacity = Policy.newBuilder().setId("capacity").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
            .setScope(Scope.GLOBAL).setStacked(stacked).setSplitAcrossShards(!stacked).setRate(1).setBurst(11).setOwner("platform").setReason("test").build();
        group.apply(2, 0, PolicyEntry.encode(PolicyState.command("alice", T0).setPut(capacity).build()));
        final CompiledPolicy compiled = twoShards.index().policies().stream().filter(p -> p.id().equals("capacity")).findFirst().orElseThrow();
        final int ordinal = compiled.ordinal();
        group.apply(3, SECOND, joined(decisions(0, ordinal, 1, 4), decisions(1, ordinal, 1, 3)));

        final UnsafeBuffer key = new UnsafeBuffer(new byte[64]);
        BucketKeys.putPrefix(key, 0, ordinal, 1);
        key.putBytes(6, "acme".getBytes(StandardCharsets.UTF_8));
        final Verdict seen = new Verdict();
        for (int shard = 0; shard < 2; shard++)
        {
            // What the leader's shard holds after the same charges at its share (CompiledPolicy#limitOnShard).
            final Limit share = compiled.limitOnShard(shard, 2);
            assertEquals(shard == 0 ? 6 : 5, share.burstTokens());
            tables[shard].peek(key, 0, 10, KeyHash.hash(key, 0, 10), share, 1, 0, SECOND + 10, seen);
            assertEquals(1, seen.remainingTokens(), "shard " + shard + ": its share less its charges, less the one peeked at");
            assertEquals(share.toString(), twoShards.rate(ordinal, 1, shard).toString(), "a replica sweeps and replays the same share");
        }
        // Two seconds later each share has one more token (1 per 2 s), not two (the whole rate).
        tables[1].peek(key, 0, 10, KeyHash.hash(key, 0, 10), compiled.limitOnShard(1, 2), 1, 0, 3 * SECOND + 10, seen);
        assertEquals(2, seen.remainingTokens());
    }
}
