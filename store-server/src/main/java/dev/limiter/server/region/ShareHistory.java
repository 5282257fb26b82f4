package dev.limiter.server.region;

import dev.limiter.protocol.policy.RegionShares;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The region's committed shares by generation, as this node applied them (docs/regions.md, several
 * Raft groups). A group's copy of the shares may be older than the control group's, and the region
 * must report whatever a copy may still allow: the most any generation from the oldest copy on gave.
 * Kept in memory from the first one recorded (at start, or a restore); an older generation is
 * unknown, and then the whole counts. Bounded: past {@link #LIMIT} entries the two oldest become one
 * that holds the larger of each share, so a merged entry overstates what it stood for, never
 * understates it.
 */
final class ShareHistory
{
    /** Most generations kept. */
    static final int LIMIT = 256;

    private record Entry(long generation, Map<String, Integer> shares)
    {
    }

    /** A policy a generation names no share of has this one (the control group's initial share). */
    private final int initial;
    /** Ascending by generation, without gaps between consecutive ones except where merged. Guarded by this. */
    private final ArrayDeque<Entry> entries = new ArrayDeque<>();

    ShareHistory(final int initial)
    {
        this.initial = initial;
    }

    /** Records the control group's shares as applied now; a generation that does not follow the newest starts anew. */
    synchronized void record(final RegionShares committed)
    {
        final long generation = committed.getGeneration();
        final Entry newest = entries.peekLast();
        if (newest != null && newest.generation() == generation)
        {
            entries.pollLast(); // the same generation again (a listener run twice, a restore of it): the newer word stands
        }
        else if (newest != null && generation != newest.generation() + 1)
        {
            entries.clear(); // a restore, or generations not seen: what came before them is not known here
        }
        entries.addLast(new Entry(generation, Map.copyOf(committed.getSharePpmMap())));
        if (entries.size() > LIMIT)
        {
            final Entry oldest = entries.pollFirst();
            final Entry next = entries.pollFirst();
            final Map<String, Integer> larger = new HashMap<>(oldest.shares());
            next.shares().forEach((id, share) -> larger.merge(id, share, Math::max));
            larger.replaceAll((id, share) -> oldest.shares().containsKey(id) && next.shares().containsKey(id) ? share :
                Math.max(share, initial));
            entries.addFirst(new Entry(oldest.generation(), Map.copyOf(larger)));
        }
    }

    /**
     * The largest share of policy {@code id} that any generation from {@code since} on gave (the one
     * in force at {@code since} and every later one recorded), or the whole when {@code since} is
     * older than every generation kept.
     */
    synchronized int highestSince(final long since, final String id)
    {
        int inForce = -1;
        int after = -1;
        for (final Entry entry : entries)
        {
            final int share = entry.shares().getOrDefault(id, initial);
            if (entry.generation() <= since)
            {
                inForce = share;
            }
            else
            {
                after = Math.max(after, share);
            }
        }
        return inForce < 0 ? ShareAllocator.WHOLE : Math.max(inForce, after);
    }

    synchronized int size()
    {
        return entries.size();
    }
}
