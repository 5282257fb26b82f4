package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ShardMap;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SDK's circuit against a scripted node: silent, then refusing with errors, then answering. */
@Timeout(30)
class CircuitTest
{
    private enum Mode { SILENT, ERROR, ANSWER }

    private volatile Mode mode = Mode.SILENT;
    /** Whether DEGRADED_REPORT is taken (else refused as by a follower during an election). */
    private volatile boolean takeReports;
    private final java.util.concurrent.atomic.AtomicInteger reportsTaken = new java.util.concurrent.atomic.AtomicInteger();
    /** When the node received each call it left unanswered (System.nanoTime). */
    private final java.util.Queue<Long> unansweredAt = new java.util.concurrent.ConcurrentLinkedQueue<>();

    /** A client of the scripted node that holds its policy set. */
    private static LimiterClient clientOf(final ScriptedNode node) throws InterruptedException
    {
        final LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1)
            .deadline(Duration.ofMillis(300)).circuit(2, Duration.ofMillis(100)).recoveryRamp(Duration.ZERO).build();
        awaitPolicies(client);
        return client;
    }

    private static void awaitPolicies(final LimiterClient client)
    {
        Await.until("the node's policy set", Duration.ofSeconds(5), () -> client.policies().version() != 0);
    }

    /** Calls {@code key} until a node decides one (the probe that closes the circuit): that decision. */
    private static Decision untilTheNodeDecides(final LimiterClient client, final Descriptor key)
    {
        final Decision[] last = new Decision[1];
        Await.until("a decision by the node", Duration.ofSeconds(3),
            () -> !(last[0] = client.acquireBlocking(key, 1)).degraded());
        return last[0];
    }

    @Test
    void aDegradedWindowNoNodeTookIsSentWithTheNextOne() throws Exception
    {
        try (ScriptedNode node = new ScriptedNode(this::answer);
             LimiterClient client = clientOf(node))
        {
            final Descriptor key = Descriptor.of("t", "/x");
            for (int outage = 1; outage <= 2; outage++)
            {
                mode = Mode.SILENT;
                for (int i = 0; i < 2; i++)
                {
                    assertTrue(client.acquireBlocking(key, 1).degraded());
                }
                takeReports = outage == 2; // the first window finds no node that takes it
                mode = Mode.ANSWER;
                assertFalse(untilTheNodeDecides(client, key).degraded());
            }
            Await.until("two windows reported", Duration.ofSeconds(3),
                () -> client.stats().degradedWindowsReported() >= 2);
            assertEquals(2, client.stats().degradedWindowsReported(), "the first window went out with the second");
            assertEquals(2, reportsTaken.get());
        }
    }

    @Test
    void anOpenCircuitProbesEveryQuarterIntervalForTwoIntervalsThenEveryInterval() throws Exception
    {
        // A failover is usually over within a second: callers are not kept on local decisions for a
        // whole interval after a new leader could answer. A cluster down for longer is probed less often.
        try (ScriptedNode node = new ScriptedNode(this::answer);
             LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1)
                 .deadline(Duration.ofMillis(100)).circuit(2, Duration.ofMillis(800)).recoveryRamp(Duration.ZERO).build())
        {
            awaitPolicies(client);
            final Descriptor key = Descriptor.of("t", "/x");
            assertTrue(client.acquireBlocking(key, 1).degraded());
            assertTrue(client.acquireBlocking(key, 1).degraded());
            final long opened = System.nanoTime();
            assertTrue(client.stats().circuitOpen());
            unansweredAt.clear();
            // Calls every 5 ms for 3.5 s: only the probes reach the node (each waits out its 100 ms deadline).
            // The probes' times are what is measured: the calls are paced, not waiting for anything.
            while (System.nanoTime() - opened < TimeUnit.MILLISECONDS.toNanos(3500))
            {
                assertTrue(client.acquireBlocking(key, 1).degraded());
                Thread.sleep(5);
            }
            // Each wait runs from the end of the previous probe (its 100 ms deadline) to the next.
            final List<long[]> waits = new ArrayList<>(); // {began, lasted} in ms since the circuit opened
            long began = 0;
            for (final long probe : unansweredAt)
            {
                final long at = TimeUnit.NANOSECONDS.toMillis(probe - opened);
                waits.add(new long[] {began, at - began});
                began = at + 100;
            }
            final String seen = waits.stream().map(w -> w[1] + " ms from " + w[0]).toList().toString();
            assertTrue(waits.size() >= 4, "probes every 200-300 ms in the first 1.6 s: " + seen);
            // A wait begins when the last probe's deadline fired, which a busy host delays: the switch
            // at 1,600 ms is checked with 100 ms either side.
            for (final long[] wait : waits)
            {
                assertTrue(wait[1] >= 190, "no sooner than a quarter interval: " + seen);
                if (wait[0] < 1500)
                {
                    assertTrue(wait[1] < 700, "a quarter of 800 ms, plus up to half of that, while the outage is young: " + seen);
                }
                if (wait[0] > 1700)
                {
                    assertTrue(wait[1] >= 790, "the whole interval once it has lasted two: " + seen);
                }
            }
            assertTrue(waits.stream().anyMatch(wait -> wait[0] >= 1500 && wait[1] >= 790), "a whole-interval wait after two intervals: " + seen);
        }
    }

    @Test
    void aProbeAnsweredWithAnErrorLetsTheNextProbeGoAndAnAnswerClosesTheCircuit() throws Exception
    {
        try (ScriptedNode node = new ScriptedNode(this::answer);
             LimiterClient client = clientOf(node))
        {
            final Descriptor key = Descriptor.of("t", "/x");
            for (int i = 0; i < 2; i++)
            {
                assertTrue(client.acquireBlocking(key, 1).degraded(), "no answer in time: decided locally");
            }
            assertTrue(client.stats().circuitOpen());

            // The node is back but failing: calls are decided locally until the open circuit's wait is
            // over; then the first to go is its probe, which gets an error, not a decision.
            mode = Mode.ERROR;
            final LimiterRequestException[] error = new LimiterRequestException[1];
            Await.until("a probe answered with the node's error", Duration.ofSeconds(3), () ->
            {
                try
                {
                    assertTrue(client.acquireBlocking(key, 1).degraded(), "no decision while the node fails");
                    return false;
                }
                catch (final LimiterRequestException e)
                {
                    error[0] = e;
                    return true;
                }
            });
            final LimiterRequestException refused = error[0];
            assertTrue(refused.getMessage().contains("busy"), refused.getMessage());

            // It recovers: a later probe must still be sent, and its answer closes the circuit.
            mode = Mode.ANSWER;
            final Decision d = untilTheNodeDecides(client, key);
            assertFalse(d.degraded(), "the node decides again: " + d);
            assertFalse(client.stats().circuitOpen());
        }
    }

    @Test
    void aGroupWhoseLeaderIsSilentHasOnlyItsOwnCallsDecidedLocallyWhileTheOtherGroupsLeaderStillDecidesTheirs() throws Exception
    {
        // Two Raft groups, one shard each: group 0 led by a node that answers, group 1 by one that
        // has gone silent (as a leader killed before its followers elect another).
        try (TwoGroups cluster = new TwoGroups(BASELINE, TwoGroups.ONE_SHARD_EACH, Duration.ofSeconds(4)))
        {
            final LimiterClient client = cluster.client;
            cluster.groupOneOut();
            assertTrue(client.stats().circuitOpen());
            assertEquals(1, client.stats().openCircuits(), "only group 1's circuit is open");
            for (int i = 0; i < 20; i++)
            {
                final Decision d = client.acquireBlocking(ON_SHARD_ZERO, 1);
                assertFalse(d.degraded(), "group 0's leader still decides its calls: " + d);
            }
            assertEquals(20, cluster.decidedByZero.get());
            // Before its first probe (a quarter of the 4 s interval): group 1's calls are decided here at once.
            final long before = System.nanoTime();
            assertTrue(client.acquireBlocking(ON_SHARD_ONE, 1).degraded());
            assertTrue(System.nanoTime() - before < TimeUnit.MILLISECONDS.toNanos(300), "without waiting for a deadline");

            cluster.oneAnswers.set(true);
            assertFalse(untilTheNodeDecides(client, ON_SHARD_ONE).degraded(), "group 1's leader answers again");
            assertFalse(client.stats().circuitOpen());
            assertEquals(0, client.stats().openCircuits());
            final Duration degraded = client.stats().degradedTime();
            assertTrue(degraded.toNanos() > 0, "the outage counts while group 1's circuit was open");
            Await.quietFor(50);
            assertEquals(degraded, client.stats().degradedTime(), "and stops counting once every circuit is closed");
        }
    }

    @Test
    void callsAnyShardMayDecideGoToTheGroupsWhoseCircuitIsClosedWhileAnotherGroupsLeaderIsSilent() throws Exception
    {
        try (TwoGroups cluster = new TwoGroups(SPLIT_SET, TwoGroups.ONE_SHARD_EACH_WITH_ORDINALS, Duration.ofSeconds(5)))
        {
            cluster.groupOneOut();
            assertEquals(1, cluster.client.stats().openCircuits(), "group 1's circuit is open");
            // Half of these would have drawn shard 1, whose group's calls are now decided locally.
            for (int i = 0; i < 40; i++)
            {
                final Decision d = cluster.client.acquireBlocking(Descriptor.of("tenant-" + i, "/search"), 1);
                assertFalse(d.degraded(), "decided from group 0's share: " + d);
            }
            assertEquals(40, cluster.decidedByZero.get());
        }
    }

    @Test
    void callsAnyShardMayDecideAlsoProbeAGroupWhoseLeaderIsBackAndCloseItsCircuit() throws Exception
    {
        try (TwoGroups cluster = new TwoGroups(SPLIT_SET, TwoGroups.ONE_SHARD_EACH_WITH_ORDINALS, Duration.ofMillis(100)))
        {
            cluster.groupOneOut();
            cluster.oneAnswers.set(true);
            // Only calls any shard may decide from now on: once group 1's circuit is half-open, one of
            // them is its probe, and the answer closes it.
            awaitWhileCalling(cluster.client, Descriptor.of("tenant-1", "/search"), () -> cluster.client.stats().openCircuits() == 0);
            assertEquals(0, cluster.client.stats().openCircuits(), "group 1's circuit closed by a call that any shard may decide");
        }
    }

    @Test
    void aGroupWhoseCallsTheShardMapMovedElsewhereNoLongerHoldsTheOutageOpen() throws Exception
    {
        // Group 1 stays silent; then the map gives its shard to group 0, so none of this client's calls is group 1's.
        final java.util.concurrent.atomic.AtomicBoolean moved = new java.util.concurrent.atomic.AtomicBoolean();
        try (TwoGroups cluster = new TwoGroups(BASELINE, leaders -> new ShardMap(moved.get() ? new int[] {0, 0} : new int[] {0, 1}, leaders),
            Duration.ofMillis(100)))
        {
            final LimiterClient client = cluster.client;
            cluster.groupOneOut();
            assertTrue(client.stats().circuitOpen());
            moved.set(true); // the client asks for the map again within a second
            awaitWhileCalling(client, ON_SHARD_ONE, () -> !client.stats().circuitOpen());
            assertFalse(client.stats().circuitOpen(), "group 1's circuit, which no call reaches any more, was closed");
            assertFalse(client.acquireBlocking(ON_SHARD_ONE, 1).degraded(), "shard 1's calls are decided by group 0's leader");
            final Duration degraded = client.stats().degradedTime();
            Await.quietFor(50);
            assertEquals(degraded, client.stats().degradedTime(), "the outage is over");
        }
    }

    @Test
    void twoGroupsOutAtOnceMakeOneOutageThatEndsWhenTheLastOfThemAnswersAgain() throws Exception
    {
        try (TwoGroups cluster = new TwoGroups(BASELINE, TwoGroups.ONE_SHARD_EACH, Duration.ofMillis(100)))
        {
            final LimiterClient client = cluster.client;
            cluster.zeroAnswers.set(false);
            for (int i = 0; i < 2; i++)
            {
                assertTrue(client.acquireBlocking(ON_SHARD_ZERO, 1).degraded());
                assertTrue(client.acquireBlocking(ON_SHARD_ONE, 1).degraded());
            }
            assertEquals(2, client.stats().openCircuits());

            cluster.zeroAnswers.set(true);
            assertFalse(untilTheNodeDecides(client, ON_SHARD_ZERO).degraded(), "group 0's leader answers again");
            assertEquals(1, client.stats().openCircuits(), "group 1's circuit is still open");
            final Duration during = client.stats().degradedTime();
            Await.until("the outage going on while group 1 is out", Duration.ofSeconds(1),
                () -> client.stats().degradedTime().compareTo(during) > 0);
            assertEquals(0, client.stats().degradedWindowsReported(), "and is not reported yet");

            cluster.oneAnswers.set(true);
            assertFalse(untilTheNodeDecides(client, ON_SHARD_ONE).degraded(), "group 1's leader answers again");
            assertEquals(0, client.stats().openCircuits());
            Await.until("the outage's window reported", Duration.ofSeconds(3),
                () -> client.stats().degradedWindowsReported() >= 1);
            Await.quietFor(100); // no second window comes
            assertEquals(1, client.stats().degradedWindowsReported(), "one window for the one outage");
            assertEquals(1, cluster.reportsTaken.get());
        }
    }

    /** Calls {@code key} until {@code done} (for at most 5 s). */
    private static void awaitWhileCalling(final LimiterClient client, final Descriptor key, final java.util.function.BooleanSupplier done)
    {
        Await.until("the circuit closed by calls", Duration.ofSeconds(5), () ->
        {
            client.acquireBlocking(key, 1);
            return done.getAsBoolean();
        });
    }

    private static final Descriptor ON_SHARD_ZERO = Descriptor.of(tenantOnShard(0), "/x");
    private static final Descriptor ON_SHARD_ONE = Descriptor.of(tenantOnShard(1), "/x");

    /** A tenant whose buckets a two-shard map puts on {@code shard}. */
    private static String tenantOnShard(final int shard)
    {
        for (int i = 0; ; i++)
        {
            final String tenant = "tenant-" + i;
            if (ShardMap.shardOf(ShardMap.tenantHash(tenant.getBytes(java.nio.charset.StandardCharsets.UTF_8)), 2) == shard)
            {
                return tenant;
            }
        }
    }

    /**
     * Two scripted nodes, node {@code zero} leading group 0 and {@code one} group 1 of a two-shard
     * map, and a client of both that holds their policy set and routes by their map; its circuits
     * open after 2 calls no node answered within 300 ms, for the probe interval given.
     */
    private static final class TwoGroups implements AutoCloseable
    {
        static final java.util.function.Function<String[], ShardMap> ONE_SHARD_EACH = leaders -> new ShardMap(new int[] {0, 1}, leaders);
        /** With the nodes' ordinals of the set in force: version 7, as ScriptedNode.policies sends it. */
        static final java.util.function.Function<String[], ShardMap> ONE_SHARD_EACH_WITH_ORDINALS = leaders ->
            new ShardMap(new int[] {0, 1}, leaders, 7, java.util.Map.of("baseline", 0, "search", 1));

        final java.util.concurrent.atomic.AtomicBoolean zeroAnswers = new java.util.concurrent.atomic.AtomicBoolean(true);
        final java.util.concurrent.atomic.AtomicBoolean oneAnswers = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.atomic.AtomicInteger decidedByZero = new java.util.concurrent.atomic.AtomicInteger();
        /** Outage windows the nodes took (DEGRADED_REPORT, taken by a node that answers). */
        final java.util.concurrent.atomic.AtomicInteger reportsTaken = new java.util.concurrent.atomic.AtomicInteger();
        private final String[] leaders = new String[2];
        private final byte[] policySet;
        private final java.util.function.Function<String[], ShardMap> map;
        private final ScriptedNode zero;
        private final ScriptedNode one;
        final LimiterClient client;

        TwoGroups(final byte[] policySet, final java.util.function.Function<String[], ShardMap> map, final Duration probe) throws Exception
        {
            this.policySet = policySet;
            this.map = map;
            zero = new ScriptedNode(request -> answer(request, zeroAnswers.get(), decidedByZero));
            one = new ScriptedNode(request -> answer(request, oneAnswers.get(), null));
            leaders[0] = zero.endpoint();
            leaders[1] = one.endpoint();
            client = LimiterClient.builder().endpoints(zero.endpoint(), one.endpoint()).connections(1)
                .deadline(Duration.ofMillis(300)).circuit(2, probe).recoveryRamp(Duration.ZERO).build();
            Await.until("the nodes' policy set and shard map", Duration.ofSeconds(5),
                () -> client.policies().version() != 0 && client.stats().routesByShard());
        }

        /** Group 1's calls go unanswered until its circuit opens. */
        void groupOneOut()
        {
            for (int i = 0; i < 2; i++)
            {
                assertTrue(client.acquireBlocking(ON_SHARD_ONE, 1).degraded(), "group 1's leader is silent: decided locally");
            }
        }

        /** Policies, PING and the shard map always; acquires and outage reports when {@code answers}. */
        private ByteBuf answer(final ScriptedNode.Request request, final boolean answers, final java.util.concurrent.atomic.AtomicInteger decided)
        {
            final ByteBuf out = Unpooled.buffer();
            switch (request.type())
            {
                case MessageType.POLICIES:
                    return ScriptedNode.policies(policySet);
                case MessageType.PING:
                    return ScriptedNode.pong(request);
                case MessageType.SHARD_MAP:
                    final int start = Frame.begin(out, MessageType.SHARD_MAP_RESULT, 0);
                    map.apply(leaders).encode(out);
                    Frame.finish(out, start);
                    return out;
                case MessageType.ACQUIRE:
                case MessageType.BATCH_ACQUIRE:
                    if (!answers)
                    {
                        return null;
                    }
                    if (decided != null)
                    {
                        decided.addAndGet(ScriptedNode.entries(request));
                    }
                    return ScriptedNode.allowAll(request);
                case MessageType.DEGRADED_REPORT:
                    if (!answers)
                    {
                        return null;
                    }
                    reportsTaken.incrementAndGet();
                    Frame.finish(out, Frame.begin(out, MessageType.DEGRADED_REPORT_RESULT, request.correlationId()));
                    return out;
                default:
                    return null;
            }
        }

        @Override
        public void close() throws Exception
        {
            try (ScriptedNode z = zero; ScriptedNode o = one)
            {
                client.close();
            }
        }
    }

    private static final byte[] BASELINE = PolicySet.newBuilder().setVersion(1)
        .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setBurst(100).setOwner("infra")).build().toByteArray();

    /** baseline, and "search": a GLOBAL budget split across the shards (any shard's leader decides a call from its share). */
    private static final byte[] SPLIT_SET = PolicySet.newBuilder().setVersion(1)
        .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setBurst(100).setOwner("infra"))
        .addPolicies(Policy.newBuilder().setId("search").setOwner("infra").setRate(1000).setBurst(1000)
            .setScope(dev.limiter.protocol.policy.Scope.GLOBAL).setSplitAcrossShards(true)
            .setSelector(dev.limiter.protocol.policy.Selector.newBuilder().setRoute("/search")))
        .build().toByteArray();

    private final byte[] set = PolicySet.newBuilder().setVersion(1)
        .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setBurst(100).setOwner("infra")).build().toByteArray();

    /** The node's side of the script: policies always, acquires and reports as the test's mode says. */
    private ByteBuf answer(final ScriptedNode.Request request)
    {
        final ByteBuf answer = Unpooled.buffer();
        final int type = request.type();
        final long correlationId = request.correlationId();
        if (type == MessageType.POLICIES)
        {
            return ScriptedNode.policies(set);
        }
        else if (type == MessageType.PING)
        {
            return ScriptedNode.pong(request); // build() waits for a PING round on every connection
        }
        else if (type == MessageType.ACQUIRE || type == MessageType.BATCH_ACQUIRE)
        {
            if (mode == Mode.SILENT)
            {
                unansweredAt.add(System.nanoTime());
                return null;
            }
            if (mode == Mode.ANSWER)
            {
                return ScriptedNode.allowAll(request);
            }
            ErrorCodec.encode(answer, correlationId, ErrorCode.INTERNAL, "node busy, try later");
        }
        else if (type == MessageType.DEGRADED_REPORT)
        {
            if (takeReports)
            {
                reportsTaken.incrementAndGet();
                Frame.finish(answer, Frame.begin(answer, MessageType.DEGRADED_REPORT_RESULT, correlationId));
            }
            else
            {
                ErrorCodec.encode(answer, correlationId, ErrorCode.NOT_LEADER, "");
            }
        }
        else
        {
            return null;
        }
        return answer;
    }
}
