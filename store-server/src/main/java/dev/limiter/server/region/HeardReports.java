package dev.limiter.server.region;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.RegionReport;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The latest report heard from each address of another region (or of this region's other nodes),
 * and what the exchange reads of them: each region's leader's newest report and its age, the most
 * a leader claimed of a policy lately, and a region's demand. Any thread.
 */
final class HeardReports
{
    private record Heard(String region, RegionReport report, long receivedAtMillis)
    {
    }

    private final long slotMillis;
    private final int regions;
    /** The share a report that names none of a policy claims (every region's initial share). */
    private final int initialShare;
    /** This node's wall clock, in milliseconds. */
    private final LongSupplier clock;
    private final Map<String, Heard> heard = new ConcurrentHashMap<>();

    /**
     * @param slotMillis   length of one region's slot
     * @param regions      how many regions there are (this one included)
     * @param initialShare the share a report that names none of a policy claims
     * @param clock        this node's wall clock, in milliseconds
     */
    HeardReports(final long slotMillis, final int regions, final int initialShare, final LongSupplier clock)
    {
        this.slotMillis = slotMillis;
        this.regions = regions;
        this.initialShare = initialShare;
        this.clock = clock;
    }

    /** {@code address} of {@code region} reported this, received now: it replaces that address's previous one. */
    void heard(final String address, final String region, final RegionReport report)
    {
        heard.put(address, new Heard(region, report, clock.getAsLong()));
    }

    /** The newest report of {@code region}'s leader (by the time it was made), or null when none was heard. */
    RegionReport leaderReport(final String region)
    {
        RegionReport newest = null;
        for (final Heard h : heard.values())
        {
            if (h.region().equals(region) && h.report().getLeader() &&
                (newest == null || Timestamps.toMillis(h.report().getAt()) > Timestamps.toMillis(newest.getAt())))
            {
                newest = h.report();
            }
        }
        return newest;
    }

    /**
     * The most any node of {@code region} that says it leads claimed of policy {@code id} in its
     * reports made within two rounds of slots before {@code newestAt}, or -1 when none: two nodes may
     * both say they lead for a moment (a leader deposed and not yet aware of it), and the larger claim
     * is the safe one to leave room for.
     */
    int claimedShare(final String region, final String id, final long newestAt)
    {
        int most = -1;
        for (final Heard h : heard.values())
        {
            if (h.region().equals(region) && h.report().getLeader() &&
                newestAt - Timestamps.toMillis(h.report().getAt()) <= 2 * slotMillis * regions)
            {
                most = Math.max(most, h.report().getSharePpmOrDefault(id, initialShare));
            }
        }
        return most;
    }

    /** Milliseconds since the newest report of that region's leader was made (its clock), or -1 when none came yet. */
    long reportAgeMillis(final String region)
    {
        final RegionReport report = leaderReport(region);
        return report == null ? -1 : Math.max(0, clock.getAsLong() - Timestamps.toMillis(report.getAt()));
    }

    /** Demand of {@code region} for policy {@code id}: its nodes' reports received in the last few slots, added up. */
    double regionDemand(final String region, final String id, final long nowMillis)
    {
        double sum = 0;
        for (final Heard h : heard.values())
        {
            if (h.region().equals(region) && nowMillis - h.receivedAtMillis() <= 4 * slotMillis * regions)
            {
                sum += h.report().getDemandPerSecondOrDefault(id, 0.0);
            }
        }
        return sum;
    }
}
