package dev.limiter.server.region;

import java.util.List;
import java.util.Map;

/**
 * How one region moves its share of a regional policy (docs/regions.md), as a pure function of what
 * it knows: its committed share, its own demand, the other regions' last reports and the wall
 * clock. Shares are millionths; the regions' shares start equal and <b>never sum above the whole</b>:
 *
 * <ul>
 * <li>a region may lower its share at any time (it decides with the lower share at once and reports
 *     it only once committed, so a report is never below what it decides with);</li>
 * <li>it may raise its share only in its own time slot (slot {@code k} belongs to region
 *     {@code k mod n}, regions sorted by name), only up to the whole minus what every other region
 *     last reported, and only from reports received in that slot after {@code guard} (so each
 *     other region's report already holds whatever it raised in its own, earlier slot, and the
 *     raise commits before the next slot's owner reads this region's report). A report counts the
 *     share being raised from the moment the raise is proposed. So no two regions raise from
 *     stale views of each other, and every raise takes only what the others have given up.</li>
 * </ul>
 * A region with no fresh report from some other region raises nothing (it cannot know what that
 * one holds): a cut-off region keeps its share, and the others keep theirs. Targets follow demand:
 * {@code floor + (whole - n x floor) x demand / total demand} (equal shares when nobody asks), with
 * 1% of hysteresis so that shares do not flutter with noise. Wall clocks of the regions must agree
 * within {@code guard} (NTP does far better).
 */
final class ShareAllocator
{
    /** The whole limit, in millionths. */
    static final int WHOLE = 1_000_000;
    /** Moves smaller than this (1%) are not made. */
    static final int HYSTERESIS = 10_000;

    private final int self;
    private final int regions;
    private final long slotMillis;
    private final long guardMillis;

    /** What another region last said of one policy, and when it said it (its wall clock). */
    record PeerView(int sharePpm, double demandPerSecond, long reportedAtMillis)
    {
    }

    /**
     * @param self        this region's name
     * @param all         every region's name (this one's included)
     * @param slotMillis  length of one region's slot; a region may raise once every {@code n} slots
     * @param guardMillis margin at both ends of a slot for clock skew, reports in flight and the commit of a raise
     */
    ShareAllocator(final String self, final List<String> all, final long slotMillis, final long guardMillis)
    {
        final List<String> sorted = all.stream().sorted().distinct().toList();
        if (!sorted.contains(self))
        {
            throw new IllegalArgumentException("region '" + self + "' is not among " + sorted);
        }
        if (guardMillis * 2 >= slotMillis)
        {
            throw new IllegalArgumentException("a slot of " + slotMillis + " ms leaves no time between guards of " + guardMillis + " ms");
        }
        this.self = sorted.indexOf(self);
        this.regions = sorted.size();
        this.slotMillis = slotMillis;
        this.guardMillis = guardMillis;
    }

    int regions()
    {
        return regions;
    }

    /** The share every region starts with (the whole split equally). */
    int initialShare()
    {
        return WHOLE / regions;
    }

    /** The floor of a policy whose {@code minSharePercent} is given (0: the default 5%), at most an equal split. */
    int floor(final int minSharePercent)
    {
        final int percent = minSharePercent == 0 ? 5 : minSharePercent;
        return Math.min(percent * (WHOLE / 100), WHOLE / regions);
    }

    /** Start (wall ms) of this region's slot that holds {@code nowMillis}, or -1 when the slot at that time is another region's. */
    long ownSlotStart(final long nowMillis)
    {
        final long slot = Math.floorDiv(nowMillis, slotMillis);
        return Math.floorMod(slot, regions) == self ? slot * slotMillis : -1;
    }

    /** The share demand asks for: the floor, plus the rest in proportion to demand (equal when nobody asks). */
    int target(final int floor, final double ownDemand, final Map<String, PeerView> peers)
    {
        double total = Math.max(0, ownDemand);
        for (final PeerView peer : peers.values())
        {
            total += Math.max(0, peer.demandPerSecond());
        }
        if (total <= 0)
        {
            return WHOLE / regions;
        }
        final long spare = WHOLE - (long)floor * regions;
        return (int)Math.min(WHOLE, floor + Math.round(spare * Math.max(0, ownDemand) / total));
    }

    /**
     * The share to propose now (equal to {@code committed}: none).
     *
     * @param committed this region's share as committed in its log
     * @param peers     every other region's last report of this policy, by region name (absent: never heard)
     */
    int next(final long nowMillis, final int floor, final int committed, final double ownDemand, final Map<String, PeerView> peers)
    {
        final int target = target(floor, ownDemand, peers);
        if (target < committed - HYSTERESIS)
        {
            return target; // giving up share is always safe
        }
        if (target <= committed + HYSTERESIS)
        {
            return committed;
        }
        final long slotStart = ownSlotStart(nowMillis);
        if (slotStart < 0 || nowMillis < slotStart + guardMillis || nowMillis > slotStart + slotMillis - guardMillis)
        {
            return committed; // not this region's time to raise
        }
        if (peers.size() < regions - 1)
        {
            return committed; // some region never reported: what it holds is unknown
        }
        long others = 0;
        for (final PeerView peer : peers.values())
        {
            if (peer.reportedAtMillis() < slotStart + guardMillis || peer.sharePpm() < 0)
            {
                return committed; // no report made in this slot: an older one may predate its own raise
            }
            others += peer.sharePpm();
        }
        final long room = WHOLE - others;
        final int raised = (int)Math.min(target, room);
        return raised > committed ? raised : committed;
    }
}
