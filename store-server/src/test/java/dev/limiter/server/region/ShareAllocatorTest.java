package dev.limiter.server.region;

import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The share protocol of {@link ShareAllocator}, simulated on a manual clock: regions that exchange
 * reports with delays, commit raises with delays, and decide requests from token buckets counted as
 * a node counts them (the limit in thousandths of a token, a request costing 1000 / share). What
 * must hold whatever the load does: the shares decided with never sum above the whole, and the
 * admissions stay within the bound docs/regions.md states.
 */
class ShareAllocatorTest
{
    private static final long SLOT = 250;
    private static final long GUARD = 50;
    private static final int WHOLE = ShareAllocator.WHOLE;

    @Test
    void aRegionRaisesOnlyInItsOwnSlotFromReportsMadeInIt()
    {
        final ShareAllocator a = new ShareAllocator("a", List.of("a", "b"), SLOT, GUARD);
        final int floor = a.floor(0);
        assertEquals(50_000, floor);
        // Slot 0 (0-250 ms) is a's, slot 1 is b's. a asks for all, b for nothing.
        final Map<String, ShareAllocator.PeerView> fresh = Map.of("b", new ShareAllocator.PeerView(500_000, 0, 60));
        assertEquals(500_000, a.next(70, floor, 500_000, 100, fresh), "b still holds half: nothing to take");
        final Map<String, ShareAllocator.PeerView> released = Map.of("b", new ShareAllocator.PeerView(50_000, 0, 60));
        assertEquals(950_000, a.next(70, floor, 500_000, 100, released), "b gave up all but its floor");
        assertEquals(500_000, a.next(40, floor, 500_000, 100, Map.of("b", new ShareAllocator.PeerView(50_000, 0, 40))),
            "within the guard at the slot's start: no raise");
        assertEquals(500_000, a.next(220, floor, 500_000, 100, released), "within the guard at its end: no raise");
        assertEquals(500_000, a.next(300, floor, 500_000, 100, Map.of("b", new ShareAllocator.PeerView(50_000, 0, 290))),
            "b's slot: no raise");
        assertEquals(500_000, a.next(570, floor, 500_000, 100, Map.of("b", new ShareAllocator.PeerView(50_000, 0, 480))),
            "a report older than this slot may predate b's raise in its own");
        assertEquals(500_000, a.next(70, floor, 500_000, 100, Map.of()), "b never reported: what it holds is unknown");
        // Lowering needs no slot and no report.
        assertEquals(50_000, a.next(300, floor, 500_000, 0, Map.of("b", new ShareAllocator.PeerView(500_000, 100, 0))));
        assertEquals(505_000, a.next(300, floor, 505_000, 100, Map.of("b", new ShareAllocator.PeerView(500_000, 100, 0))),
            "a 1% difference from the target (half) is noise: no move");
    }

    @Test
    void aSlotThatLeavesNoRoomBetweenItsGuardsOrARegionNotListedIsRefused()
    {
        assertThrows(IllegalArgumentException.class, () -> new ShareAllocator("a", List.of("a", "b"), 100, 50));
        assertThrows(IllegalArgumentException.class, () -> new ShareAllocator("c", List.of("a", "b"), SLOT, GUARD));
        assertThrows(IllegalArgumentException.class, () -> RegionConfig.parse("EU", null, null, SLOT, GUARD));
        assertThrows(IllegalArgumentException.class, () -> RegionConfig.parse("eu", "us=127.0.0.1:7480", null, SLOT, GUARD),
            "another region without a token");
        assertThrows(IllegalArgumentException.class, () -> RegionConfig.parse("eu", "us=127.0.0.1", "0123456789abcdef", SLOT, GUARD));
        assertEquals(List.of("eu", "us"), RegionConfig.parse("eu", "us=127.0.0.1:7480", "0123456789abcdef", SLOT, GUARD).regions());
    }

    /** Demand per region (requests a second) at a time (ms), for a simulation. */
    @FunctionalInterface
    interface Load
    {
        double perSecond(int region, long millis);
    }

    @Test
    void skewedThenShiftingLoadNeverSumsAboveTheWholeAndStaysWithinTheBound()
    {
        // 0-5 s: region 0 asks 3x the limit, region 1 nothing; 5-10 s: the reverse; 10-15 s: both 2x; 15-20 s: they
        // swap every 400 ms (faster than shares can follow).
        final Load load = (region, t) -> t < 5_000 ? (region == 0 ? 300 : 0) : t < 10_000 ? (region == 0 ? 0 : 300) :
            t < 15_000 ? 200 : ((t / 400) % 2 == region ? 300 : 0);
        final Simulation run = new Simulation(2, 100, 100, load, 20_000, 42).run();
        assertTrue(run.maxDecidedSum <= WHOLE, "shares decided with summed to " + run.maxDecidedSum);
        assertTrue(run.maxReportedSum <= WHOLE, "shares reported summed to " + run.maxReportedSum);
        run.assertWithinBound();
        // Demand is followed: in the second half of each skewed phase the busy region admits most of the limit.
        assertTrue(run.admitted(0, 2_500, 5_000) >= 0.85 * 100 * 2.5, "region 0 while alone: " + run.admitted(0, 2_500, 5_000));
        assertTrue(run.admitted(1, 7_500, 10_000) >= 0.85 * 100 * 2.5, "region 1 while alone: " + run.admitted(1, 7_500, 10_000));
        // Both busy: about half each.
        assertTrue(Math.abs(run.admitted(0, 12_000, 15_000) - run.admitted(1, 12_000, 15_000)) <= 0.15 * 100 * 3,
            run.admitted(0, 12_000, 15_000) + " vs " + run.admitted(1, 12_000, 15_000));
        System.out.printf("two regions, 20 s: admitted %d of a global %d/s limit (burst %d): over R x T + B by %d; " +
            "worst 1 s window over R + B: %d, its bound's slack %d; share raises in all %.2f%n", run.total(), 100, 100,
            run.total() - (100 * 20 + 100), run.worstWindowExcess, run.worstWindowSlack, run.raisedTotal / (double)WHOLE);
    }

    @Test
    void threeRegionsWithRandomLoadAndSlowReportsKeepTheInvariant()
    {
        final Random random = new Random(7);
        final double[][] level = new double[3][40];
        for (int r = 0; r < 3; r++)
        {
            for (int k = 0; k < 40; k++)
            {
                level[r][k] = random.nextInt(4) * 100;
            }
        }
        final Load load = (region, t) -> level[region][(int)Math.min(39, t / 500)];
        final Simulation run = new Simulation(3, 300, 50, load, 20_000, 9).latency(5, 120).run();
        assertTrue(run.maxDecidedSum <= WHOLE, "shares decided with summed to " + run.maxDecidedSum);
        assertTrue(run.maxReportedSum <= WHOLE, "shares reported summed to " + run.maxReportedSum);
        run.assertWithinBound();
    }

    @Test
    void aRegionCutOffKeepsItsShareAndTheOthersCannotTakeIt()
    {
        // Region 1 is cut off from 4 s to 8 s: it keeps deciding with its last share; region 0, though busier, cannot
        // raise (it cannot know what region 1 holds), and raises once region 1 reports again and gives its share up.
        final Load load = (region, t) -> t < 3_000 ? 150 : region == 0 ? 300 : 0;
        final Simulation run = new Simulation(2, 100, 100, load, 12_000, 3).cutOff(1, 4_000, 8_000).run();
        assertTrue(run.maxDecidedSum <= WHOLE, "shares decided with summed to " + run.maxDecidedSum);
        final int before = run.decidedAt(0, 3_900);
        assertEquals(before, run.decidedAt(0, 7_900), "no raise while region 1 is cut off");
        assertTrue(run.decidedAt(0, 11_000) > 900_000, "raised once it is back: " + run.decidedAt(0, 11_000));
        run.assertWithinBound();
    }

    /**
     * Regions exchanging reports and deciding requests, 1 ms per step. Region r's report is made when asked (every
     * tenth of a slot) and arrives after a random latency; a proposal commits after a few milliseconds.
     */
    static final class Simulation
    {
        private final int n;
        private final long rate;
        private final long burst;
        private final Load load;
        private final long duration;
        private final Random random;
        private long minLatency = 1;
        private long maxLatency = 20;
        private int cutRegion = -1;
        private long cutFrom;
        private long cutTo;

        private final ShareAllocator[] allocators;
        private final int[] committed;
        private final int[] pending;
        private final long[] commitAt;
        private final double[] demand;
        private final double[] debt;
        private final long[] tokens; // thousandths of a token, as a node counts a regional limit
        private final List<Map<String, ShareAllocator.PeerView>> views = new ArrayList<>();
        private final ArrayDeque<long[]> inFlight = new ArrayDeque<>(); // {arrival, to, from, share, demand x 1000, made}
        private final List<int[]> decidedHistory = new ArrayList<>();
        private final List<long[]> admissions = new ArrayList<>(); // {t, region}
        private final long[] raisedAt; // per ms: sum of raises (millionths) at that ms
        int maxDecidedSum;
        int maxReportedSum;
        long raisedTotal;
        long worstWindowExcess = Long.MIN_VALUE;
        long worstWindowSlack = Long.MAX_VALUE;

        Simulation(final int n, final long rate, final long burst, final Load load, final long duration, final long seed)
        {
            this.n = n;
            this.rate = rate;
            this.burst = burst;
            this.load = load;
            this.duration = duration;
            this.random = new Random(seed);
            final List<String> names = new ArrayList<>();
            for (int r = 0; r < n; r++)
            {
                names.add("r" + r);
            }
            allocators = new ShareAllocator[n];
            committed = new int[n];
            pending = new int[n];
            commitAt = new long[n];
            demand = new double[n];
            debt = new double[n];
            tokens = new long[n];
            raisedAt = new long[(int)duration + 1];
            for (int r = 0; r < n; r++)
            {
                allocators[r] = new ShareAllocator("r" + r, names, SLOT, GUARD);
                committed[r] = allocators[r].initialShare();
                pending[r] = -1;
                tokens[r] = burst * 1000;
                views.add(new HashMap<>());
            }
        }

        Simulation latency(final long min, final long max)
        {
            minLatency = min;
            maxLatency = max;
            return this;
        }

        Simulation cutOff(final int region, final long from, final long to)
        {
            cutRegion = region;
            cutFrom = from;
            cutTo = to;
            return this;
        }

        private boolean cut(final int region, final long t)
        {
            return region == cutRegion && t >= cutFrom && t < cutTo;
        }

        private int decided(final int r)
        {
            return pending[r] < 0 ? committed[r] : Math.min(committed[r], pending[r]);
        }

        private int reported(final int r)
        {
            return pending[r] < 0 ? committed[r] : Math.max(committed[r], pending[r]);
        }

        Simulation run()
        {
            final long tick = SLOT / 10;
            for (long t = 0; t <= duration; t++)
            {
                // Commits land.
                for (int r = 0; r < n; r++)
                {
                    if (pending[r] >= 0 && t >= commitAt[r])
                    {
                        if (pending[r] > committed[r])
                        {
                            raisedAt[(int)t] += pending[r] - committed[r];
                            raisedTotal += pending[r] - committed[r];
                        }
                        committed[r] = pending[r];
                        pending[r] = -1;
                    }
                }
                // Reports arrive.
                for (int k = inFlight.size(); k > 0; k--)
                {
                    final long[] m = inFlight.poll();
                    if (m[0] <= t)
                    {
                        views.get((int)m[1]).put("r" + m[2], new ShareAllocator.PeerView((int)m[3], m[4] / 1000.0, m[5]));
                    }
                    else
                    {
                        inFlight.add(m);
                    }
                }
                // Every tenth of a slot: each region asks the others (a report is made now, arrives later), then steps.
                if (t % tick == 0)
                {
                    for (int to = 0; to < n; to++)
                    {
                        for (int from = 0; from < n; from++)
                        {
                            if (from != to && !cut(from, t) && !cut(to, t))
                            {
                                final long arrival = t + minLatency + (long)(random.nextDouble() * (maxLatency - minLatency));
                                inFlight.add(new long[] {arrival, to, from, reported(from), Math.round(demand[from] * 1000), t});
                            }
                        }
                    }
                    for (int r = 0; r < n; r++)
                    {
                        if (pending[r] >= 0)
                        {
                            continue;
                        }
                        final int next = allocators[r].next(t, allocators[r].floor(0), committed[r], demand[r], views.get(r));
                        if (next != committed[r])
                        {
                            pending[r] = next;
                            commitAt[r] = t + 2 + random.nextInt(8);
                        }
                    }
                }
                int decidedSum = 0;
                int reportedSum = 0;
                final int[] now = new int[n];
                for (int r = 0; r < n; r++)
                {
                    now[r] = decided(r);
                    decidedSum += now[r];
                    reportedSum += reported(r);
                }
                decidedHistory.add(now);
                maxDecidedSum = Math.max(maxDecidedSum, decidedSum);
                maxReportedSum = Math.max(maxReportedSum, reportedSum);
                // Requests: each region refills its bucket and decides what arrives this ms at its share.
                for (int r = 0; r < n; r++)
                {
                    final double perSecond = load.perSecond(r, t);
                    demand[r] += 0.001 * (perSecond - demand[r]); // about a second of memory, as the node smooths it
                    tokens[r] = Math.min(burst * 1000, tokens[r] + rate); // rate x 1000 thousandths a second = rate a ms
                    debt[r] += perSecond / 1000.0;
                    while (debt[r] >= 1)
                    {
                        debt[r] -= 1;
                        final long cost = (1000L * WHOLE + now[r] - 1) / Math.max(1, now[r]);
                        if (now[r] > 0 && tokens[r] >= cost)
                        {
                            tokens[r] -= cost;
                            admissions.add(new long[] {t, r});
                        }
                    }
                }
            }
            return this;
        }

        long total()
        {
            return admissions.size();
        }

        long admitted(final int region, final long from, final long to)
        {
            return admissions.stream().filter(a -> a[1] == region && a[0] >= from && a[0] < to).count();
        }

        int decidedAt(final int region, final long t)
        {
            return decidedHistory.get((int)t)[region];
        }

        /**
         * docs/regions.md: over any window W, the regions together admit at most R x W + B x (1 + the shares
         * raised within W): the shares decided with never sum above 1, so the refills add up to at most R x W; what
         * the buckets held at the window's start is at most B; and a raise revalues what a bucket holds by up to B x
         * the raise. Checked on every 1 s window (1 ms apart) and on the whole run.
         */
        void assertWithinBound()
        {
            final long[] perMs = new long[(int)duration + 1];
            admissions.forEach(a -> perMs[(int)a[0]]++);
            final long window = 1_000;
            long inWindow = 0;
            long raisedInWindow = 0;
            for (int t = 0; t <= duration; t++)
            {
                inWindow += perMs[t];
                raisedInWindow += raisedAt[t];
                if (t >= window)
                {
                    inWindow -= perMs[t - (int)window];
                    raisedInWindow -= raisedAt[t - (int)window];
                }
                final double bound = rate * Math.min(t + 1, window) / 1000.0 + burst * (1 + raisedInWindow / (double)WHOLE) + n;
                assertTrue(inWindow <= bound, "window ending at " + t + " ms admitted " + inWindow + ", bound " + bound);
                worstWindowExcess = Math.max(worstWindowExcess, inWindow - (rate + burst));
                worstWindowSlack = Math.min(worstWindowSlack, (long)Math.floor(bound - inWindow));
            }
            final double whole = rate * duration / 1000.0 + burst * (1 + raisedTotal / (double)WHOLE) + n;
            assertTrue(total() <= whole, "admitted " + total() + " over the run, bound " + whole);
        }
    }
}
