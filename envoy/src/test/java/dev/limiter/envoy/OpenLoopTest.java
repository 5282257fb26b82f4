package dev.limiter.envoy;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The benchmarks' open loop, with calls answered at once in the test: counts by kind and the exit status. */
@Timeout(30)
class OpenLoopTest
{
    /** An answer: refused or passed, and whether the gateway's SDK decided it alone. */
    private record Answer(boolean refused, boolean local)
    {
    }

    @Test
    void everyCallIsSentAtTheRateAndCountedByHowItWasAnswered() throws Exception
    {
        final OpenLoop.Tally<Answer> tally = new OpenLoop.Tally<>(Answer::refused, Answer::local);
        // 200 calls a second for 1 s: every 4th refused, every 10th decided locally, every 50th an error.
        OpenLoop.drive(200, 1, 20, tally, (i, observer) ->
        {
            if (i % 50 == 49)
            {
                observer.onError(new IllegalStateException("call " + i + " failed"));
                return;
            }
            observer.onNext(new Answer(i % 4 == 0, i % 10 == 0));
            observer.onCompleted();
        });
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = tally.report("test bench", 200, 1, 3, "ok", "overLimit",
            new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));

        assertEquals(0, status);
        final JsonObject line = JsonParser.parseString(out.toString(StandardCharsets.UTF_8)).getAsJsonObject();
        assertEquals(200, line.get("sent").getAsLong(), line.toString());
        assertEquals(4, line.get("errors").getAsLong(), line.toString());
        assertEquals(50, line.get("overLimit").getAsLong(), line.toString());
        assertEquals(146, line.get("ok").getAsLong(), line.toString());
        assertEquals(20, line.get("decidedLocally").getAsLong(), line.toString());
        assertEquals(3, line.get("targets").getAsInt());
        assertTrue(line.get("maxUs").getAsDouble() >= line.get("p50Us").getAsDouble(), line.toString());
        assertEquals("limiter test bench: first error: java.lang.IllegalStateException: call 49 failed",
            err.toString(StandardCharsets.UTF_8).strip());
    }

    @Test
    void aRunWithNoAnswerExitsOne()
    {
        // Calls that all ended in errors, without a second of driving them.
        final OpenLoop.Tally<Answer> tally = new OpenLoop.Tally<>(Answer::refused, Answer::local);
        for (int i = 0; i < 3; i++)
        {
            tally.sent.incrementAndGet();
            tally.observer(System.nanoTime()).onError(new IllegalStateException("down"));
        }
        final PrintStream sink = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        assertEquals(1, tally.report("test bench", 100, 1, 1, "allowed", "refused", sink, sink));
    }

    @Test
    void optionsOutOfRangeAreRefusedNamingTheOption()
    {
        assertEquals("--rate: 1 to 1000000 calls per second, was 0",
            assertThrows(IllegalArgumentException.class, () -> OpenLoop.checkRates(0, 1, 0, 20)).getMessage());
        assertEquals("--deadline-ms: 1 to 60000, was 0",
            assertThrows(IllegalArgumentException.class, () -> OpenLoop.checkRates(1, 1, 0, 0)).getMessage());
    }
}
