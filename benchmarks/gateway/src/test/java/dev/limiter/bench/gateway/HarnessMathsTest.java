package dev.limiter.bench.gateway;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The harness's own parts: the open-loop schedule, the tally's percentiles, tenants, and the summary's maths. */
@Timeout(10)
class HarnessMathsTest
{
    @Test
    void pacerDueTimesAreOnTheFixedScheduleWhateverHappened()
    {
        final Pacer pacer = new Pacer(1_000, 5_000);
        assertEquals(5_000, pacer.dueNanos(0));
        assertEquals(5_000 + 1_000_000, pacer.dueNanos(1));
        assertEquals(5_000 + 1_000_000_000L, pacer.dueNanos(1_000));
        // Three requests at 3/s are a third of a second apart, without drift from rounding.
        assertEquals(1_000_000_000L, new Pacer(3, 0).dueNanos(3));
    }

    @Test
    void lateRequestsAreIssuedAtOnceWithTheirOriginalDueTime()
    {
        final long start = System.nanoTime() - 1_000_000_000L; // a second behind: 100 requests late at 100/s
        final Pacer pacer = new Pacer(100, start);
        final long before = System.nanoTime();
        for (int i = 0; i < 50; i++)
        {
            assertEquals(start + i * 10_000_000L, pacer.awaitNext());
        }
        assertTrue(System.nanoTime() - before < 500_000_000L, "late requests must not be waited for");
    }

    @Test
    void pacerSpinsFivePercentOfTheIntervalWithinItsBounds()
    {
        assertEquals(Pacer.MAX_SPIN_NANOS, Pacer.spinNanos(1));
        assertEquals(250_000, Pacer.spinNanos(200));
        assertEquals(Pacer.MIN_SPIN_NANOS, Pacer.spinNanos(100_000));
        assertThrows(IllegalArgumentException.class, () -> new Pacer(0, 0));
    }

    @Test
    void tallyCountsOutcomesAndReportsPercentilesInMicroseconds()
    {
        final Tally tally = new Tally();
        for (int i = 1; i <= 1_000; i++)
        {
            tally.answered(i <= 900 ? 200 : 429, i * 1_000L); // 1 us .. 1000 us
        }
        tally.answered(503, 5_000_000L);
        tally.failed(new IllegalStateException("refused"));
        assertEquals(1_001, tally.answers());
        assertEquals(1_002, tally.ended());
        assertEquals(501, tally.percentileMicros(50), 2);
        assertEquals(991, tally.percentileMicros(99), 3);
        final Summary.Run run = Summary.Run.parse(tally.json("redis", "open-1000", 2, 10, "load average: 1.0"));
        assertEquals(900, run.number("ok"));
        assertEquals(100, run.number("refused"));
        assertEquals(1, run.number("otherStatus"));
        assertEquals(1, run.number("errors"));
        assertEquals(100.1, run.number("throughput"), 0.01);
        assertEquals("status 503", tally.firstProblem());
    }

    @Test
    void hotShareSendsThatPercentToTenantZeroAndSpreadsTheRest()
    {
        final LoadDriver driver = new LoadDriver(LoadDriver.parse(
            new String[] {"--rate", "1000", "--tenants", "11", "--hot-share", "30"}));
        int hot = 0;
        for (long i = 0; i < 1_000; i++)
        {
            hot += driver.tenantOf(i).equals("tenant-0") ? 1 : 0;
        }
        assertEquals(300, hot);
        assertThrows(IllegalArgumentException.class, () -> LoadDriver.parse(new String[] {"--rate", "1", "--connections", "2"}));
        assertThrows(IllegalArgumentException.class, () -> LoadDriver.parse(new String[] {"--rat", "1"}));
        assertThrows(IllegalArgumentException.class,
            () -> new LoadDriver(Map.of("--rate", "1", "--hot-share", "101")));
    }

    @Test
    void addedLatencyIsEachRoundsRunMinusThatRoundsRunWithoutALimiter()
    {
        final List<Summary.Run> runs = List.of(
            line("none", 1, 100), line("redis", 1, 400), line("limiter", 1, 150),
            line("none", 2, 200), line("redis", 2, 300), line("limiter", 2, 260),
            line("none", 3, 100), line("redis", 3, 1100), line("limiter", 3, 130),
            line("redis", 4, 9999)); // no no-limiter run in round 4: left out
        assertEquals(List.of(300.0, 100.0, 1000.0), boxed(Summary.added(runs, "open-1000", "redis", "p99Us")));
        assertEquals(300, Summary.median(Summary.added(runs, "open-1000", "redis", "p99Us")));
        assertEquals(50, Summary.median(Summary.added(runs, "open-1000", "limiter", "p99Us")));
        assertEquals(2.5, Summary.median(new double[] {4, 1, 2, 3}));
        assertTrue(Summary.tables(runs).contains("ratio limiter/Redis 0.17 (aim: below 0.50): met"),
            Summary.tables(runs));
        assertThrows(IllegalArgumentException.class, () -> Summary.Run.parse("{\"config\":\"none\"}"));
    }

    private static Summary.Run line(final String config, final int round, final double p99)
    {
        return Summary.Run.parse("{\"config\":\"" + config + "\",\"load\":\"open-1000\",\"round\":" + round
            + ",\"throughput\":1000.0,\"p50Us\":1.0,\"p99Us\":" + p99 + ",\"p999Us\":" + (p99 * 2) + "}");
    }

    private static List<Double> boxed(final double[] values)
    {
        return java.util.Arrays.stream(values).boxed().toList();
    }
}
