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
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
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

    /** A client of the scripted node that holds its policy set. */
    private static LimiterClient clientOf(final ScriptedNode node) throws InterruptedException
    {
        final LimiterClient client = LimiterClient.builder().endpoints(node.endpoint()).connections(1)
            .deadline(Duration.ofMillis(300)).circuit(2, Duration.ofMillis(100)).recoveryRamp(Duration.ZERO).build();
        final long until = System.currentTimeMillis() + 5000;
        while (client.policies().version() == 0 && System.currentTimeMillis() < until)
        {
            Thread.sleep(10);
        }
        return client;
    }

    private static Decision untilTheNodeDecides(final LimiterClient client, final Descriptor key) throws InterruptedException
    {
        final long back = System.currentTimeMillis() + 3000;
        Decision d = client.acquireBlocking(key, 1);
        while (d.degraded() && System.currentTimeMillis() < back)
        {
            Thread.sleep(20);
            d = client.acquireBlocking(key, 1);
        }
        return d;
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
                Thread.sleep(200);
                assertFalse(untilTheNodeDecides(client, key).degraded());
            }
            final long deadline = System.currentTimeMillis() + 3000;
            while (client.degradedWindowsReported() < 2 && System.currentTimeMillis() < deadline)
            {
                Thread.sleep(10);
            }
            assertEquals(2, client.degradedWindowsReported(), "the first window went out with the second");
            assertEquals(2, reportsTaken.get());
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
            assertTrue(client.circuitOpen());

            // The node is back but failing: the probe gets an error, not a decision.
            mode = Mode.ERROR;
            Thread.sleep(200);
            final LimiterRequestException refused = assertThrows(LimiterRequestException.class, () -> client.acquireBlocking(key, 1));
            assertTrue(refused.getMessage().contains("busy"), refused.getMessage());

            // It recovers: a later probe must still be sent, and its answer closes the circuit.
            mode = Mode.ANSWER;
            final Decision d = untilTheNodeDecides(client, key);
            assertFalse(d.degraded(), "the node decides again: " + d);
            assertFalse(client.circuitOpen());
        }
    }

    @Test
    void aGroupWhoseLeaderIsSilentHasOnlyItsOwnCallsDecidedLocallyWhileTheOtherGroupsLeaderStillDecidesTheirs() throws Exception
    {
        // Two Raft groups, one shard each: group 0 led by a node that answers, group 1 by one that
        // has gone silent (as a leader killed before its followers elect another).
        final java.util.concurrent.atomic.AtomicBoolean groupOneAnswers = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.atomic.AtomicInteger decidedByGroupZero = new java.util.concurrent.atomic.AtomicInteger();
        final String[] leaders = new String[2];
        try (ScriptedNode zero = new ScriptedNode(request -> groupAnswer(request, leaders, true, decidedByGroupZero));
             ScriptedNode one = new ScriptedNode(request -> groupAnswer(request, leaders, groupOneAnswers.get(), null)))
        {
            leaders[0] = zero.endpoint();
            leaders[1] = one.endpoint();
            try (LimiterClient client = LimiterClient.builder().endpoints(zero.endpoint(), one.endpoint()).connections(1)
                .deadline(Duration.ofMillis(300)).circuit(2, Duration.ofMillis(100)).recoveryRamp(Duration.ZERO).build())
            {
                final long until = System.currentTimeMillis() + 5000;
                while ((client.policies().version() == 0 || !client.routesByShard()) && System.currentTimeMillis() < until)
                {
                    Thread.sleep(10);
                }
                assertTrue(client.routesByShard(), "the client follows the nodes' shard map");
                final Descriptor onZero = Descriptor.of(tenantOnShard(0), "/x");
                final Descriptor onOne = Descriptor.of(tenantOnShard(1), "/x");

                for (int i = 0; i < 2; i++)
                {
                    assertTrue(client.acquireBlocking(onOne, 1).degraded(), "group 1's leader is silent: decided locally");
                }
                assertTrue(client.circuitOpen());
                assertEquals(1, client.openCircuits(), "only group 1's circuit is open");
                final long openedAt = System.nanoTime();
                for (int i = 0; i < 20; i++)
                {
                    final Decision d = client.acquireBlocking(onZero, 1);
                    assertFalse(d.degraded(), "group 0's leader still decides its calls: " + d);
                }
                assertEquals(20, decidedByGroupZero.get());
                if (System.nanoTime() - openedAt < TimeUnit.MILLISECONDS.toNanos(100))
                {
                    // Still within the probe interval: group 1's calls are decided here at once.
                    final long before = System.nanoTime();
                    assertTrue(client.acquireBlocking(onOne, 1).degraded());
                    assertTrue(System.nanoTime() - before < TimeUnit.MILLISECONDS.toNanos(300), "without waiting for a deadline");
                }

                groupOneAnswers.set(true);
                assertFalse(untilTheNodeDecides(client, onOne).degraded(), "group 1's leader answers again");
                assertFalse(client.circuitOpen());
                assertEquals(0, client.openCircuits());
                final Duration degraded = client.degradedTime();
                assertTrue(degraded.toNanos() > 0, "the outage counts while group 1's circuit was open");
                Thread.sleep(50);
                assertEquals(degraded, client.degradedTime(), "and stops counting once every circuit is closed");
            }
        }
    }

    @Test
    void callsAnyShardMayDecideGoToTheGroupsWhoseCircuitIsClosedWhileAnotherGroupsLeaderIsSilent() throws Exception
    {
        // A GLOBAL budget split across the shards: any shard's leader decides a call from its share.
        final byte[] splitSet = PolicySet.newBuilder().setVersion(1)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setBurst(100).setOwner("infra"))
            .addPolicies(Policy.newBuilder().setId("search").setOwner("infra").setRate(1000).setBurst(1000)
                .setScope(dev.limiter.protocol.policy.Scope.GLOBAL).setSplitAcrossShards(true)
                .setSelector(dev.limiter.protocol.policy.Selector.newBuilder().setRoute("/search")))
            .build().toByteArray();
        final java.util.concurrent.atomic.AtomicBoolean groupOneAnswers = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.atomic.AtomicInteger decidedByGroupZero = new java.util.concurrent.atomic.AtomicInteger();
        final String[] leaders = new String[2];
        // The map carries the nodes' ordinals of the set in force: version 7, as ScriptedNode.policies sends it.
        final java.util.function.Supplier<ShardMap> map = () -> new ShardMap(new int[] {0, 1}, leaders, 7, java.util.Map.of("baseline", 0, "search", 1));
        try (ScriptedNode zero = new ScriptedNode(request -> groupAnswer(request, splitSet, map, true, decidedByGroupZero));
             ScriptedNode one = new ScriptedNode(request -> groupAnswer(request, splitSet, map, groupOneAnswers.get(), null)))
        {
            leaders[0] = zero.endpoint();
            leaders[1] = one.endpoint();
            try (LimiterClient client = LimiterClient.builder().endpoints(zero.endpoint(), one.endpoint()).connections(1)
                .deadline(Duration.ofMillis(300)).circuit(2, Duration.ofSeconds(5)).recoveryRamp(Duration.ZERO).build())
            {
                final long until = System.currentTimeMillis() + 5000;
                while ((client.policies().version() == 0 || !client.routesByShard()) && System.currentTimeMillis() < until)
                {
                    Thread.sleep(10);
                }
                assertTrue(client.routesByShard(), "the client follows the nodes' shard map");
                for (int i = 0; i < 2; i++)
                {
                    assertTrue(client.acquireBlocking(Descriptor.of(tenantOnShard(1), "/x"), 1).degraded(), "group 1's leader is silent");
                }
                assertEquals(1, client.openCircuits(), "group 1's circuit is open");

                // Half of these would have drawn shard 1, whose group's calls are now decided locally.
                for (int i = 0; i < 40; i++)
                {
                    final Decision d = client.acquireBlocking(Descriptor.of("tenant-" + i, "/search"), 1);
                    assertFalse(d.degraded(), "decided from group 0's share: " + d);
                }
                assertEquals(40, decidedByGroupZero.get());
            }
        }
    }

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

    /** A node of a two-group cluster: policies and the shard map always; acquires when {@code answers}. */
    private ByteBuf groupAnswer(final ScriptedNode.Request request, final String[] leaders, final boolean answers,
        final java.util.concurrent.atomic.AtomicInteger decided)
    {
        return groupAnswer(request, set, () -> new ShardMap(new int[] {0, 1}, leaders), answers, decided);
    }

    private static ByteBuf groupAnswer(final ScriptedNode.Request request, final byte[] policySet,
        final java.util.function.Supplier<ShardMap> shardMap, final boolean answers, final java.util.concurrent.atomic.AtomicInteger decided)
    {
        switch (request.type())
        {
            case MessageType.POLICIES:
                return ScriptedNode.policies(policySet);
            case MessageType.PING:
                return ScriptedNode.pong(request);
            case MessageType.SHARD_MAP:
                final ByteBuf map = Unpooled.buffer();
                final int start = Frame.begin(map, MessageType.SHARD_MAP_RESULT, 0);
                shardMap.get().encode(map);
                Frame.finish(map, start);
                return map;
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
            default:
                return null;
        }
    }

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
