package dev.limiter.server.region;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.RegionReport;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** Two regions, slots of 100 ms: a round of slots is 200 ms. The node's clock is the test's. */
class HeardReportsTest
{
    private static final long T0 = 1_700_000_000_000L;

    private final AtomicLong clock = new AtomicLong(T0);
    private final HeardReports heard = new HeardReports(100, 2, 500_000, clock::get);

    private static RegionReport report(final boolean leader, final long atMillis, final int ordersPpm,
        final double ordersDemand)
    {
        return RegionReport.newBuilder().setRegion("us").setLeader(leader).setAt(Timestamps.fromMillis(atMillis))
            .putSharePpm("orders", ordersPpm).putDemandPerSecond("orders", ordersDemand).build();
    }

    @Test
    void theLeadersReportIsTheNewestByItsOwnClockOfTheNodesThatSayTheyLead()
    {
        final RegionReport older = report(true, T0 - 50, 400_000, 1);
        final RegionReport newer = report(true, T0 - 10, 300_000, 1);
        heard.heard("us-2:8081", "us", newer);
        heard.heard("us-1:8081", "us", older); // received later, made earlier
        heard.heard("us-3:8081", "us", report(false, T0, 900_000, 1));

        assertSame(newer, heard.leaderReport("us"));
        assertNull(heard.leaderReport("ap"), "no report of a region never heard");
    }

    @Test
    void aClaimCountsTheMostOfTheLeadersReportsMadeWithinTwoRoundsOfSlotsOfTheNewest()
    {
        heard.heard("us-1:8081", "us", report(true, T0 - 400, 700_000, 0)); // deposed, two rounds before: counts
        heard.heard("us-2:8081", "us", report(true, T0, 300_000, 0));
        heard.heard("us-3:8081", "us", report(false, T0, 990_000, 0)); // not a leader: never counts
        assertEquals(700_000, heard.claimedShare("us", "orders", T0));

        heard.heard("us-1:8081", "us", report(true, T0 - 401, 700_000, 0));
        assertEquals(300_000, heard.claimedShare("us", "orders", T0), "a claim older than two rounds is over");
        assertEquals(500_000, heard.claimedShare("us", "search", T0),
            "a policy a report does not name: the initial share");
        assertEquals(-1, heard.claimedShare("ap", "orders", T0));
    }

    @Test
    void theReportAgeIsUnknownBeforeTheLeadersFirstReportThenFollowsTheClock()
    {
        assertEquals(-1, heard.reportAgeMillis("us"));
        heard.heard("us-3:8081", "us", report(false, T0, 0, 0));
        assertEquals(-1, heard.reportAgeMillis("us"), "a follower's report says nothing of the leader");

        heard.heard("us-1:8081", "us", report(true, T0 - 30, 0, 0));
        assertEquals(30, heard.reportAgeMillis("us"));
        clock.addAndGet(1_000);
        assertEquals(1_030, heard.reportAgeMillis("us"), "it grows while the region is cut off");
        heard.heard("us-1:8081", "us", report(true, T0 + 5_000, 0, 0)); // a clock ahead of this node's
        assertEquals(0, heard.reportAgeMillis("us"));
    }

    @Test
    void aRegionsDemandAddsUpItsNodesReportsReceivedWithinFourRoundsOfSlots()
    {
        heard.heard("us-1:8081", "us", report(true, T0, 0, 10));
        clock.addAndGet(300);
        heard.heard("us-2:8081", "us", report(false, T0, 0, 5.5));

        assertEquals(15.5, heard.regionDemand("us", "orders", T0 + 800), 1e-9);
        assertEquals(5.5, heard.regionDemand("us", "orders", T0 + 801), 1e-9, "us-1's report was received 801 ms ago");
        assertEquals(0, heard.regionDemand("us", "search", T0), 1e-9);
    }
}
