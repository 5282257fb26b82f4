package dev.limiter.server.history;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.server.control.PolicyState;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NodeHistoryTest
{
    private static final long T0 = 1_800_000_000_000L;
    private static final long INTERVAL = 10_000;

    private final AtomicLong now = new AtomicLong(T0);
    /** Cumulative counts per policy, as the node's counters would read. */
    private final Map<String, long[]> totals = new HashMap<>();
    private final AtomicLong p99 = new AtomicLong();
    private final PolicyState state = new PolicyState();

    private NodeHistory history(final int capacity)
    {
        return new NodeHistory("n1", "eu", () -> new HistoryReading(copy(totals), p99.get()),
            NodeHistory.degradedOf(state), now::get, INTERVAL, capacity);
    }

    private static Map<String, long[]> copy(final Map<String, long[]> totals)
    {
        final Map<String, long[]> copy = new HashMap<>();
        totals.forEach((policy, counts) -> copy.put(policy, counts.clone()));
        return copy;
    }

    private void count(final String policy, final int kind, final long n)
    {
        totals.computeIfAbsent(policy, p -> new long[HistoryReading.KINDS])[kind] += n;
    }

    private void interval(final NodeHistory history)
    {
        now.addAndGet(INTERVAL);
        history.sample();
    }

    private static JsonArray points(final NodeHistory history, final long since)
    {
        return JsonParser.parseString(history.json(since)).getAsJsonObject().getAsJsonArray("points");
    }

    private static JsonObject policy(final JsonObject point, final String id)
    {
        for (final var element : point.getAsJsonArray("policies"))
        {
            if (element.getAsJsonObject().get("policy").getAsString().equals(id))
            {
                return element.getAsJsonObject();
            }
        }
        return null;
    }

    @Test
    void shouldKeepWhatEachIntervalCountedNotTheTotals()
    {
        count("orders", HistoryReading.ALLOWED, 5); // before the history started: in no point
        final NodeHistory history = history(16);
        count("orders", HistoryReading.ALLOWED, 7);
        count("orders", HistoryReading.DENIED, 2);
        p99.set(850);
        interval(history);
        count("orders", HistoryReading.DENIED, 3);
        count("search", HistoryReading.SHADOW_WOULD_DENY, 4);
        count("search", HistoryReading.SHADOW_WOULD_ALLOW, 1);
        count("orders", HistoryReading.FALSE_REJECTIONS, 1);
        interval(history);
        now.addAndGet(1_000);

        final JsonObject answer = JsonParser.parseString(history.json(0)).getAsJsonObject();
        assertEquals("n1", answer.get("node").getAsString());
        assertEquals("eu", answer.get("region").getAsString());
        assertEquals(INTERVAL, answer.get("intervalMs").getAsLong());
        final JsonArray points = answer.getAsJsonArray("points");
        assertEquals(3, points.size(), "two intervals and the one in progress");
        final JsonObject first = points.get(0).getAsJsonObject();
        assertEquals(T0 + INTERVAL, first.get("atMillis").getAsLong());
        assertEquals(7, policy(first, "orders").get("allowed").getAsLong());
        assertEquals(2, policy(first, "orders").get("denied").getAsLong());
        assertEquals(850, first.get("latencyP99Micros").getAsLong());
        final JsonObject second = points.get(1).getAsJsonObject();
        assertEquals(0, policy(second, "orders").get("allowed").getAsLong());
        assertEquals(3, policy(second, "orders").get("denied").getAsLong());
        assertEquals(1, policy(second, "orders").get("falseRejections").getAsLong());
        assertEquals(4, policy(second, "search").get("shadowWouldDeny").getAsLong());
        assertEquals(1, policy(second, "search").get("shadowWouldAllow").getAsLong());
        final JsonObject partial = points.get(2).getAsJsonObject();
        assertTrue(partial.get("partial").getAsBoolean());
        assertEquals(0, partial.getAsJsonArray("policies").size(), "nothing counted since the last point");
    }

    @Test
    void shouldDropTheOldestPointWhenTheRingIsFullAndAnswerOnlyPointsAfterSince()
    {
        final NodeHistory history = history(3);
        for (int i = 1; i <= 5; i++)
        {
            count("orders", HistoryReading.ALLOWED, i);
            interval(history);
        }
        final JsonArray all = points(history, 0);
        assertEquals(4, all.size(), "three kept and the one in progress");
        assertEquals(3, policy(all.get(0).getAsJsonObject(), "orders").get("allowed").getAsLong());
        assertEquals(5, policy(all.get(2).getAsJsonObject(), "orders").get("allowed").getAsLong());
        final JsonArray recent = points(history, T0 + 4 * INTERVAL);
        assertEquals(2, recent.size(), "the point ending after since, and the one in progress");
        assertEquals(T0 + 5 * INTERVAL, recent.get(0).getAsJsonObject().get("atMillis").getAsLong());
    }

    @Test
    void shouldMarkThePointsAnSdkDegradedWindowCoveredEvenWhenReportedLate()
    {
        final NodeHistory history = history(16);
        for (int i = 0; i < 4; i++)
        {
            interval(history);
        }
        // Reported after the fact: the SDK decided alone from T0 + 12 s to T0 + 25 s (points 2 and 3).
        final DegradedWindow window = DegradedWindow.newBuilder().setClient("svc@host#1")
            .setStart(Timestamps.fromMillis(T0 + 12_000)).setEnd(Timestamps.fromMillis(T0 + 25_000))
            .putDecisions("orders|OPEN|allowed", 12).build();
        assertEquals(PolicyState.Status.OK,
            state.apply(PolicyState.command("sdk", T0 + 40_000).setDegraded(window).build()).status());

        final JsonArray points = points(history, 0);
        final List<Boolean> degraded = new java.util.ArrayList<>();
        points.forEach(p -> degraded.add(p.getAsJsonObject().get("degraded").getAsBoolean()));
        assertEquals(List.of(false, true, true, false, false), degraded);
    }

    @Test
    void shouldReadTheCountersMetricsExportAndZeroFalseRejectionsWithoutTheMeter()
    {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final AtomicLong allowed = new AtomicLong(40);
        FunctionCounter.builder(MeterHistorySource.DECISIONS, allowed, AtomicLong::get)
            .tags("policy", "orders", "outcome", "allowed").register(registry);
        Counter.builder(MeterHistorySource.DECISIONS).tags("policy", "orders", "outcome", "denied").register(registry)
            .increment(3);
        Counter.builder(MeterHistorySource.SHADOW_DECISIONS).tags("policy", "orders", "outcome", "would_deny")
            .register(registry).increment(9);
        final Timer latency = Timer.builder(MeterHistorySource.LATENCY).publishPercentiles(0.99).register(registry);
        latency.record(Duration.ofMillis(2));

        final HistoryReading reading = new MeterHistorySource(registry).get();
        final long[] orders = reading.counts().get("orders");
        assertEquals(40, orders[HistoryReading.ALLOWED]);
        assertEquals(3, orders[HistoryReading.DENIED]);
        assertEquals(9, orders[HistoryReading.SHADOW_WOULD_DENY]);
        assertEquals(0, orders[HistoryReading.FALSE_REJECTIONS], "no appeals meter on this build: 0, not made up");
        assertTrue(reading.latencyP99Micros() >= 1_000, "p99 of a 2 ms decision: " + reading.latencyP99Micros());

        Counter.builder(MeterHistorySource.FALSE_REJECTIONS).tags("policy", "orders").register(registry).increment(2);
        assertEquals(2, new MeterHistorySource(registry).get().counts().get("orders")[HistoryReading.FALSE_REJECTIONS]);
        assertFalse(reading.counts().containsKey("search"));
    }
}
