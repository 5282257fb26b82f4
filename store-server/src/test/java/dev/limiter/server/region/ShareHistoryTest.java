package dev.limiter.server.region;

import dev.limiter.protocol.policy.RegionShares;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a region reports while a group's copy of its shares is older than its control group's:
 * the most any generation from that copy on gave, the whole when that generation is not known here,
 * and never less than the truth once old generations are merged to keep the history bounded.
 */
class ShareHistoryTest
{
    private static final int INITIAL = 500_000;

    private static RegionShares shares(final long generation, final int orders)
    {
        return RegionShares.newBuilder().setGeneration(generation).putSharePpm("orders", orders).build();
    }

    @Test
    void theHighestShareSinceAGenerationCountsTheOneInForceThenAndEveryLaterOne()
    {
        final ShareHistory history = new ShareHistory(INITIAL);
        history.record(RegionShares.getDefaultInstance()); // generation 0: nothing committed, the initial share
        history.record(shares(1, 950_000));
        history.record(shares(2, 50_000));
        history.record(shares(3, 200_000));
        assertEquals(950_000, history.highestSince(0, "orders"), "a copy of generation 0 may still allow the raise of generation 1");
        assertEquals(950_000, history.highestSince(1, "orders"));
        assertEquals(200_000, history.highestSince(2, "orders"), "generation 2's lowering, then 3's raise");
        assertEquals(200_000, history.highestSince(3, "orders"));
        assertEquals(200_000, history.highestSince(7, "orders"), "a copy newer than this node: what it applied last");
        assertEquals(INITIAL, history.highestSince(3, "other"), "a policy no generation names has the initial share");
    }

    @Test
    void aGenerationOlderThanEveryOneKeptCountsAsTheWholeAndARestoreOrAGapStartsAnew()
    {
        final ShareHistory history = new ShareHistory(INITIAL);
        history.record(shares(5, 300_000)); // this node started from a snapshot of generation 5
        assertEquals(ShareAllocator.WHOLE, history.highestSince(4, "orders"), "what generation 4 allowed is not known here");
        assertEquals(300_000, history.highestSince(5, "orders"));
        history.record(shares(6, 100_000));
        history.record(shares(9, 80_000)); // generations 7 and 8 not seen: a restore
        assertEquals(1, history.size());
        assertEquals(ShareAllocator.WHOLE, history.highestSince(6, "orders"));
        history.record(shares(9, 90_000)); // the same generation again: the newer word stands
        assertEquals(90_000, history.highestSince(9, "orders"));
    }

    @Test
    void mergingOldGenerationsToStayBoundedNeverUnderstatesWhatACopyMayAllow()
    {
        final Random random = new Random(7);
        final ShareHistory history = new ShareHistory(INITIAL);
        final List<RegionShares> all = new ArrayList<>();
        for (long generation = 0; generation < 4 * ShareHistory.LIMIT; generation++)
        {
            final RegionShares.Builder shares = RegionShares.newBuilder().setGeneration(generation);
            if (random.nextInt(4) > 0)
            {
                shares.putSharePpm("orders", 50_000 + random.nextInt(900_001)); // else unnamed: the initial share
            }
            all.add(shares.build());
            history.record(shares.build());
        }
        assertTrue(history.size() <= ShareHistory.LIMIT, "bounded: " + history.size());
        for (int since = 0; since < all.size(); since++)
        {
            int truth = 0;
            for (int g = since; g < all.size(); g++)
            {
                truth = Math.max(truth, all.get(g).getSharePpmOrDefault("orders", INITIAL));
            }
            final int reported = history.highestSince(since, "orders");
            assertTrue(reported >= truth, "since generation " + since + ": " + reported + " below " + truth);
            if (since >= all.size() - ShareHistory.LIMIT / 2)
            {
                assertEquals(truth, reported, "recent generations are kept as they were");
            }
        }
    }
}
