package dev.limiter.server.engine;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shard's sample of its busiest keys, on a manual clock. */
class HotKeysTest
{
    private final HotKeys hot = new HotKeys();
    private final UnsafeBuffer buffer = new UnsafeBuffer(new byte[256]);
    private long now = 1_000_000_000L;

    private void decide(final String key)
    {
        final byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        buffer.putBytes(0, bytes);
        hot.decided(buffer, 0, bytes.length, hashOf(bytes), 1, now);
    }

    private static long hashOf(final byte[] bytes)
    {
        long h = 1125899906842597L;
        for (final byte b : bytes)
        {
            h = 31 * h + b;
        }
        return h;
    }

    @Test
    void aKeyTakingHalfTheTrafficAmongAThousandIsReportedFirstWithAboutHalfTheShare()
    {
        final Random random = new Random(7);
        for (int i = 0; i < 200_000; i++)
        {
            decide(i % 2 == 0 ? "hot-tenant" : "tenant-" + random.nextInt(1000));
            now += 10_000; // 10 us apart: 2 s in all, two reports
        }
        final HotKeys.Report report = hot.report();
        final HotKeys.Entry top = report.top().get(0);
        assertEquals("hot-tenant", new String(top.key(), StandardCharsets.UTF_8));
        assertTrue(top.share() > 0.4 && top.share() < 0.65, "about half: " + top.share());
        assertTrue(report.top().size() <= HotKeys.REPORTED);
        assertTrue(report.top().size() < 2 || report.top().get(1).share() < 0.1, "the others are each a sliver: " + report.top());
        assertEquals(top.share(), report.topShare(), 0.0);
    }

    @Test
    void aKeyThatCoolsDownLeavesTheReportWithinAFewSeconds()
    {
        for (int i = 0; i < 60_000; i++)
        {
            decide(i % 4 == 0 ? "was-hot" : "steady-" + (i % 3));
            now += 20_000; // 50k decisions a second
        }
        assertTrue(hot.report().top().stream().anyMatch(e -> new String(e.key(), StandardCharsets.UTF_8).equals("was-hot")));
        for (int i = 0; i < 250_000; i++)
        {
            decide("steady-" + (i % 3));
            now += 20_000;
        }
        final HotKeys.Report report = hot.report();
        assertTrue(report.top().stream().noneMatch(e -> new String(e.key(), StandardCharsets.UTF_8).equals("was-hot") &&
            e.share() > 0.05), "5 s later it is gone or negligible: " + report.top());
        assertTrue(report.windowNanos() > 0 && report.windowNanos() <= 1_100_000_000L, "a report covers about a second: " + report.windowNanos());
    }

    @Test
    void aLongKeyIsKeptAsItsPrefixAndMarkedCut()
    {
        final String longKey = "t".repeat(HotKeys.MAX_KEY_BYTES + 40);
        for (int i = 0; i < HotKeys.SAMPLE_EVERY * 10; i++)
        {
            decide(longKey);
        }
        now += HotKeys.PUBLISH_NANOS;
        for (int i = 0; i < 2 * HotKeys.SAMPLE_EVERY; i++) // at least one more sample, which publishes
        {
            decide(longKey);
        }
        final HotKeys.Entry top = hot.report().top().get(0);
        assertTrue(top.truncated());
        assertArrayEquals(longKey.substring(0, HotKeys.MAX_KEY_BYTES).getBytes(StandardCharsets.UTF_8), top.key());
        assertEquals(1.0, top.share(), 0.0);
    }

    @Test
    void aShardThatStoodIdleStartsAFreshTable()
    {
        for (int i = 0; i < 40_000; i++)
        {
            decide("before-the-pause");
            now += 50_000; // 2 s
        }
        assertEquals("before-the-pause", new String(hot.report().top().get(0).key(), StandardCharsets.UTF_8));
        now += 60 * HotKeys.PUBLISH_NANOS; // a minute without a decision (it lost the lead, say)
        for (int i = 0; i < 40_000; i++)
        {
            decide("after-" + (i % 2));
            now += 50_000;
        }
        final HotKeys.Report report = hot.report();
        assertTrue(report.top().stream().noneMatch(e -> new String(e.key(), StandardCharsets.UTF_8).equals("before-the-pause")),
            "nothing from before the pause: " + report.top());
        assertTrue(report.windowNanos() <= 1_100_000_000L, "and no window spans the pause: " + report.windowNanos());
    }

    @Test
    void nothingIsReportedBeforeAnyDecision()
    {
        assertSame(HotKeys.Report.EMPTY, hot.report());
        assertEquals(0, hot.report().topShare(), 0.0);
        assertFalse(hot.report().top().iterator().hasNext());
    }

    @Test
    void aKeyIsWeighedByTheTokensItAsksForSoFewLargeAsksCountAsMuchAsManySmallOnes()
    {
        final byte[] blocks = "blocks".getBytes(StandardCharsets.UTF_8);
        final byte[] singles = "singles".getBytes(StandardCharsets.UTF_8);
        // 100 asks of 1,000 tokens a second (an SDK's token blocks) and 100,000 asks of 1, until a report.
        for (int i = 0; hot.report().top().isEmpty(); i++)
        {
            now += 10_000;
            buffer.putBytes(0, singles);
            hot.decided(buffer, 0, singles.length, hashOf(singles), 1, now);
            if (i % 1_000 == 0)
            {
                buffer.putBytes(0, blocks);
                hot.decided(buffer, 0, blocks.length, hashOf(blocks), 1_000, now);
            }
        }
        final HotKeys.Report report = hot.report();
        assertEquals(2, report.top().size(), report.top().toString());
        for (final HotKeys.Entry entry : report.top())
        {
            assertEquals(0.5, entry.share(), 0.1, "each asked for half the tokens: " + report.top());
            assertEquals(100_000, entry.tokensPerSecond(), 15_000, "about 100,000 tokens a second: " + report.top());
        }
        for (final HotKeys.Entry entry : report.top())
        {
            // What a shard flags answers by: the reported rate of the very key.
            assertEquals(entry.tokensPerSecond(), hot.tokensPerSecond(hashOf(entry.key()), entry.key().length));
        }
        assertEquals(0, hot.tokensPerSecond(hashOf(new byte[] {1}), 1), "a key not reported has no rate");
    }
}
