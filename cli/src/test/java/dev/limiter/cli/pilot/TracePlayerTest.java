package dev.limiter.cli.pilot;

import com.google.gson.JsonParser;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The trace's schedule and the player's open-loop pacing, on a manual clock. */
class TracePlayerTest
{
    private static final long SECOND = 1_000_000_000L;

    /** Time moves only when the player parks, straight to the moment it waits for. */
    static final class ManualPacer implements TracePlayer.Pacer
    {
        long now = 5 * SECOND;

        @Override
        public long nanoTime()
        {
            return now;
        }

        @Override
        public void parkUntil(final long nanos)
        {
            now = Math.max(now, nanos);
        }
    }

    private static Trace trace(final String tenants)
    {
        return Trace.parse(JsonParser.parseString("{\"route\":\"/r\"," +
            "\"policy\":{\"id\":\"p\",\"rate\":10,\"burst\":10,\"owner\":\"o\"},\"firstTenants\":[\"a\"]," +
            "\"backend\":{\"workers\":1,\"serviceMillis\":10,\"maxQueue\":1,\"maxWaitMillis\":100}," +
            "\"targets\":{\"backendP99Millis\":100,\"decisionP99Millis\":10},\"tenants\":[" + tenants
                + "]}").getAsJsonObject());
    }

    private static final String TWO_TENANTS =
        "{\"id\":\"a\",\"wellBehaved\":true,\"segments\":[{\"from\":0,\"to\":1,\"rate\":10}]}," +
        "{\"id\":\"b\",\"segments\":[{\"from\":0.5,\"to\":1,\"rate\":20}]}";

    @Test
    void everyRequestIsHandedOverWhenDueWithoutWaitingForAnswers()
    {
        final Trace trace = trace(TWO_TENANTS);
        final ManualPacer pacer = new ManualPacer();
        final List<long[]> sent = new ArrayList<>();
        // The sink never answers: an open-loop player goes on regardless.
        final TracePlayer.Played played = new TracePlayer(pacer).play(trace.schedule(2 * SECOND),
            (tenant, due) -> sent.add(new long[] {tenant, due, pacer.now}), new AtomicBoolean());
        assertEquals(20 + 20, played.sent(), "a: 10/s for 2 s, b: 20/s for the second half");
        assertEquals(0, played.maxLateNanos());
        assertFalse(played.stopped());
        long last = 0;
        int a = 0;
        for (final long[] s : sent)
        {
            assertEquals(s[1], s[2], "handed over exactly when due");
            assertTrue(s[1] >= last, "in due order");
            last = s[1];
            if (s[0] == 0)
            {
                a++;
            }
            else
            {
                assertTrue(s[1] - 5 * SECOND >= SECOND, "b starts half-way through the 2 s phase");
            }
        }
        assertEquals(20, a);
        // Even spacing at the tenant's rate: a's requests 100 ms apart.
        final List<Long> dueA = sent.stream().filter(s -> s[0] == 0).map(s -> s[1]).toList();
        assertEquals(SECOND / 10, dueA.get(1) - dueA.get(0));
    }

    @Test
    void aCompressedPhaseKeepsTheRatesAndTheSegmentsShareOfTime()
    {
        final Trace trace = trace(TWO_TENANTS);
        final Trace.Schedule full = trace.schedule(20 * SECOND);
        final Trace.Schedule compressed = trace.schedule(2 * SECOND);
        assertEquals(400, full.size());
        assertEquals(40, compressed.size());
        assertEquals(full.size(), trace.schedule(20 * SECOND).size(), "the same inputs give the same schedule");
    }

    @Test
    void aLatePlayerRecordsHowLateAndStopEndsThePlayAtTheNextRequest()
    {
        final Trace trace = trace(TWO_TENANTS);
        final ManualPacer pacer = new ManualPacer();
        final AtomicBoolean stop = new AtomicBoolean();
        final int[] count = {0};
        final TracePlayer.Played played = new TracePlayer(pacer).play(trace.schedule(2 * SECOND), (tenant, due) ->
        {
            pacer.now += 3_000_000; // the sink took 3 ms: every later request goes out up to 3 ms late, never skipped
            if (++count[0] == 5)
            {
                stop.set(true);
            }
        }, stop);
        assertEquals(5, played.sent());
        assertTrue(played.stopped());
        assertTrue(played.maxLateNanos() <= 3_000_000, "late by " + played.maxLateNanos());
    }

    @Test
    void theBundledTraceParsesAndABadSegmentIsRefusedNamingItsTenant() throws Exception
    {
        final Trace bundled = Trace.read(Path.of("..", "config", "pilot-trace.json"));
        assertTrue(bundled.tenants().stream().anyMatch(Trace.Tenant::wellBehaved));
        assertTrue(bundled.tenants().stream().anyMatch(t -> !t.wellBehaved()));
        assertTrue(bundled.backend().capacityPerSecond() > 0);
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> trace("{\"id\":\"x\",\"segments\":[{\"from\":0.5,\"to\":0.2,\"rate\":1}]}"));
        assertTrue(e.getMessage().startsWith("tenant 'x': a segment needs 0 <= from < to <= 1"), e.getMessage());
    }

    @Test
    void theModelBucketRefusesBeyondBurstAndRefillsAtTheRate()
    {
        final ModelBucket bucket = new ModelBucket(10, 3);
        assertTrue(bucket.take(0));
        assertTrue(bucket.take(0));
        assertTrue(bucket.take(0));
        assertFalse(bucket.take(0), "the burst is spent");
        assertFalse(bucket.take(SECOND / 20), "half a token after 50 ms");
        assertTrue(bucket.take(SECOND / 10 + SECOND / 20), "a whole one 100 ms after the last take");
    }
}
