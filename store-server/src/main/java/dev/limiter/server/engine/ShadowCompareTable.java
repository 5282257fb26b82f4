package dev.limiter.server.engine;

import org.agrona.DirectBuffer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What one shard's shadow evaluations predicted against what was enforced, per policy (the
 * shadow's ordinal), tenant and route, over time: a ring of {@value #WINDOWS} windows of
 * {@value #WINDOW_MILLIS} ms (two hours at five-minute resolution), each a Space-Saving table of
 * {@value #SLOTS} keys (Metwally et al.). A key new to a full window takes the slot with the
 * least weight, inheriting that weight (so a heavy key that arrives late is still kept), while the
 * evicted key's counts move to its policy's {@code untracked} count: the rows' counts are exact
 * from the time their key was last taken in, and rows plus untracked add up to every decision.
 *
 * <p>Single writer: the shard's owner thread; no lock, and nothing allocated per decision (keys
 * are copied into a fixed array, their first {@value #MAX_KEY_BYTES} bytes, and matched by
 * ordinal, hash and length), apart from growing the per-policy arrays when a policy ordinal is
 * first seen. The arrays are allocated when the shard evaluates its first shadow, so a node
 * without shadows holds none of them. The owner publishes an immutable {@link Snapshot} (the only
 * other allocation) at most once per {@value #PUBLISH_MILLIS} ms while counts change, and on
 * {@link #publishIfChanged} (called once a second by the owner), which other threads read.
 *
 * <p>Counts never mix versions: each policy's counts belong to one shadow version and one
 * enforced version; an evaluation under a newer one clears that policy's counts in every window
 * and starts over ({@link Versions#sinceMillis}), and one under an older one (a frame routed just
 * before the change) is dropped.
 */
final class ShadowCompareTable
{
    static final long WINDOW_MILLIS = 5 * 60_000L;
    /** Two hours of windows plus the one being filled. */
    static final int WINDOWS = 25;
    static final int SLOTS = 128;
    static final int MAX_KEY_BYTES = 128;
    static final long PUBLISH_MILLIS = 1_000L;

    /** One key's counts in one window. */
    record Row(int ordinal, String tenant, String route, boolean truncated, long decisions, long enforcedRejections,
               long predictedRejections, long newlyRejected, long newlyFreed)
    {
    }

    /** One window: from {@code startMillis} for {@link #WINDOW_MILLIS}; its rows and each ordinal's untracked count. */
    record Window(long startMillis, List<Row> rows, long[] untracked)
    {
        long untracked(final int ordinal)
        {
            return ordinal < untracked.length ? untracked[ordinal] : 0;
        }
    }

    /** The versions a policy's counts belong to, and since when (wall-clock millis) they have been counted. */
    record Versions(long shadowVersion, long enforcedVersion, long sinceMillis)
    {
    }

    /** What the table held when it was last published: its windows, oldest first, and each ordinal's versions. */
    record Snapshot(List<Window> windows, Versions[] versions)
    {
        static final Snapshot EMPTY = new Snapshot(List.of(), new Versions[0]);

        /** The versions counted for {@code ordinal}, or null when it has none. */
        Versions versions(final int ordinal)
        {
            return ordinal >= 0 && ordinal < versions.length ? versions[ordinal] : null;
        }
    }

    private static final long NONE = Long.MIN_VALUE;

    private final int[] ordinals = new int[WINDOWS * SLOTS];
    private final int[] lengths = new int[WINDOWS * SLOTS];
    private final long[] hashes = new long[WINDOWS * SLOTS];
    /** Space-Saving weight: decisions since taken in plus what the key inherited. */
    private final long[] weights = new long[WINDOWS * SLOTS];
    private final long[] decisions = new long[WINDOWS * SLOTS];
    private final long[] enforcedRejections = new long[WINDOWS * SLOTS];
    private final long[] predictedRejections = new long[WINDOWS * SLOTS];
    private final long[] newlyRejected = new long[WINDOWS * SLOTS];
    private final long[] newlyFreed = new long[WINDOWS * SLOTS];
    private final byte[] keys = new byte[WINDOWS * SLOTS * MAX_KEY_BYTES];
    private final int[] used = new int[WINDOWS];
    /** The window number ({@code millis / WINDOW_MILLIS}) each ring position holds, or {@link #NONE}. */
    private final long[] windowNumbers = new long[WINDOWS];
    /** Untracked decisions per ring position and ordinal. */
    private final long[][] untracked = new long[WINDOWS][];
    private long[] shadowVersions = new long[0];
    private long[] enforcedVersions = new long[0];
    private long[] sinceMillis = new long[0];
    /** Ring positions changed since the last publication, one bit each. */
    private long changed;
    private long lastPublished = NONE;
    private final Window[] published = new Window[WINDOWS];
    private volatile Snapshot snapshot = Snapshot.EMPTY;

    ShadowCompareTable()
    {
        Arrays.fill(windowNumbers, NONE);
        for (int w = 0; w < WINDOWS; w++)
        {
            untracked[w] = new long[0];
        }
    }

    /**
     * Counts one shadow evaluation. Owner thread only.
     *
     * @param ordinal         the shadow policy's ordinal
     * @param shadowVersion   the shadow's version
     * @param enforcedVersion the version of the same id that answered the request (0: another policy answered it)
     * @param key             {@code u8 tenant length | tenant | route} at {@code offset}, {@code length} bytes
     * @param hash            the key's hash
     * @param enforcedAllowed what the request was answered
     * @param wouldAllow      what the shadow would have answered
     * @param nowMillis       wall-clock time
     */
    void record(final int ordinal, final long shadowVersion, final long enforcedVersion, final DirectBuffer key,
        final int offset, final int length, final long hash, final boolean enforcedAllowed, final boolean wouldAllow,
        final long nowMillis)
    {
        if (!current(ordinal, shadowVersion, enforcedVersion, nowMillis))
        {
            return;
        }
        final int w = window(nowMillis);
        final int base = w * SLOTS;
        final int count = used[w];
        int slot = -1;
        int min = base;
        for (int i = base; i < base + count; i++)
        {
            if (hashes[i] == hash && lengths[i] == length && ordinals[i] == ordinal)
            {
                slot = i;
                break;
            }
            if (weights[i] < weights[min])
            {
                min = i;
            }
        }
        if (slot < 0)
        {
            long inherited = 0;
            if (count < SLOTS)
            {
                slot = base + count;
                used[w] = count + 1;
            }
            else
            {
                slot = min;
                inherited = weights[min];
                untrack(w, ordinals[min], decisions[min]);
            }
            ordinals[slot] = ordinal;
            hashes[slot] = hash;
            lengths[slot] = length;
            weights[slot] = inherited;
            decisions[slot] = 0;
            enforcedRejections[slot] = 0;
            predictedRejections[slot] = 0;
            newlyRejected[slot] = 0;
            newlyFreed[slot] = 0;
            key.getBytes(offset, keys, slot * MAX_KEY_BYTES, Math.min(length, MAX_KEY_BYTES));
        }
        weights[slot]++;
        decisions[slot]++;
        enforcedRejections[slot] += enforcedAllowed ? 0 : 1;
        predictedRejections[slot] += wouldAllow ? 0 : 1;
        newlyRejected[slot] += enforcedAllowed && !wouldAllow ? 1 : 0;
        newlyFreed[slot] += !enforcedAllowed && wouldAllow ? 1 : 0;
        changed |= 1L << w;
        if (lastPublished == NONE || nowMillis - lastPublished >= PUBLISH_MILLIS)
        {
            publish(nowMillis);
        }
    }

    /**
     * Publishes what changed since the last publication, if anything did, first letting go of windows older
     * than the ring keeps. Owner thread only.
     */
    void publishIfChanged(final long nowMillis)
    {
        final long oldest = Math.floorDiv(nowMillis, WINDOW_MILLIS) - WINDOWS + 1;
        for (int w = 0; w < WINDOWS; w++)
        {
            if (windowNumbers[w] != NONE && windowNumbers[w] < oldest)
            {
                windowNumbers[w] = NONE;
                used[w] = 0;
                Arrays.fill(untracked[w], 0);
                changed |= 1L << w;
            }
        }
        if (changed != 0)
        {
            publish(nowMillis);
        }
    }

    /** The last published counts (any thread). */
    Snapshot snapshot()
    {
        return snapshot;
    }

    /**
     * Whether an evaluation under these versions counts: a newer version (or a policy never seen)
     * clears the policy's counts first; an older one is dropped.
     */
    private boolean current(final int ordinal, final long shadowVersion, final long enforcedVersion,
        final long nowMillis)
    {
        if (ordinal >= shadowVersions.length)
        {
            final int grown = Math.max(ordinal + 1, 2 * shadowVersions.length);
            shadowVersions = Arrays.copyOf(shadowVersions, grown);
            enforcedVersions = Arrays.copyOf(enforcedVersions, grown);
            sinceMillis = Arrays.copyOf(sinceMillis, grown);
        }
        final long shadow = shadowVersions[ordinal];
        final long enforced = enforcedVersions[ordinal];
        if (shadowVersion == shadow && enforcedVersion == enforced && shadow != 0)
        {
            return true;
        }
        if (shadowVersion < shadow || (shadowVersion == shadow && enforcedVersion < enforced))
        {
            return false;
        }
        forget(ordinal);
        shadowVersions[ordinal] = shadowVersion;
        enforcedVersions[ordinal] = enforcedVersion;
        sinceMillis[ordinal] = nowMillis;
        return true;
    }

    /** Removes every count of {@code ordinal}, in every window. */
    private void forget(final int ordinal)
    {
        for (int w = 0; w < WINDOWS; w++)
        {
            final int base = w * SLOTS;
            int kept = base;
            for (int i = base; i < base + used[w]; i++)
            {
                if (ordinals[i] != ordinal)
                {
                    if (kept != i)
                    {
                        move(i, kept);
                    }
                    kept++;
                }
            }
            if (kept != base + used[w] || untracked(w, ordinal) != 0)
            {
                changed |= 1L << w;
            }
            used[w] = kept - base;
            if (ordinal < untracked[w].length)
            {
                untracked[w][ordinal] = 0;
            }
        }
        changed |= 1L; // republish the versions even when nothing was counted yet
    }

    private void move(final int from, final int to)
    {
        ordinals[to] = ordinals[from];
        hashes[to] = hashes[from];
        lengths[to] = lengths[from];
        weights[to] = weights[from];
        decisions[to] = decisions[from];
        enforcedRejections[to] = enforcedRejections[from];
        predictedRejections[to] = predictedRejections[from];
        newlyRejected[to] = newlyRejected[from];
        newlyFreed[to] = newlyFreed[from];
        System.arraycopy(keys, from * MAX_KEY_BYTES, keys, to * MAX_KEY_BYTES, MAX_KEY_BYTES);
    }

    /** The ring position of the window holding {@code nowMillis}, emptied first when it held an older window. */
    private int window(final long nowMillis)
    {
        final long number = Math.floorDiv(nowMillis, WINDOW_MILLIS);
        final int w = (int)Math.floorMod(number, (long)WINDOWS);
        if (windowNumbers[w] != number)
        {
            windowNumbers[w] = number;
            used[w] = 0;
            Arrays.fill(untracked[w], 0);
            changed |= 1L << w;
        }
        return w;
    }

    private long untracked(final int w, final int ordinal)
    {
        return ordinal < untracked[w].length ? untracked[w][ordinal] : 0;
    }

    private void untrack(final int w, final int ordinal, final long count)
    {
        if (ordinal >= untracked[w].length)
        {
            untracked[w] = Arrays.copyOf(untracked[w], Math.max(ordinal + 1, 2 * untracked[w].length));
        }
        untracked[w][ordinal] += count;
    }

    private void publish(final long nowMillis)
    {
        for (long bits = changed; bits != 0; bits &= bits - 1)
        {
            final int w = Long.numberOfTrailingZeros(bits);
            published[w] = windowNumbers[w] == NONE ? null : describe(w);
        }
        changed = 0;
        lastPublished = nowMillis;
        final List<Window> windows = new ArrayList<>(WINDOWS);
        for (final Window window : published)
        {
            if (window != null)
            {
                windows.add(window);
            }
        }
        windows.sort((a, b) -> Long.compare(a.startMillis(), b.startMillis()));
        final Versions[] versions = new Versions[shadowVersions.length];
        for (int o = 0; o < versions.length; o++)
        {
            versions[o] = shadowVersions[o] == 0 ? null : new Versions(shadowVersions[o], enforcedVersions[o],
                sinceMillis[o]);
        }
        snapshot = new Snapshot(List.copyOf(windows), versions);
    }

    private Window describe(final int w)
    {
        final List<Row> rows = new ArrayList<>(used[w]);
        for (int i = w * SLOTS; i < w * SLOTS + used[w]; i++)
        {
            final int at = i * MAX_KEY_BYTES;
            final int stored = Math.min(lengths[i], MAX_KEY_BYTES);
            final int fullTenant = Byte.toUnsignedInt(keys[at]);
            final int tenantLength = Math.min(fullTenant, stored - 1);
            final boolean truncated = lengths[i] > MAX_KEY_BYTES;
            // A key cut short names the part that was cut with "...".
            final String tenant = new String(keys, at + 1, tenantLength, StandardCharsets.UTF_8) +
                (tenantLength < fullTenant ? "..." : "");
            final String route = new String(keys, at + 1 + tenantLength, stored - 1 - tenantLength,
                StandardCharsets.UTF_8) + (truncated ? "..." : "");
            rows.add(new Row(ordinals[i], tenant, route, truncated, decisions[i], enforcedRejections[i],
                predictedRejections[i], newlyRejected[i], newlyFreed[i]));
        }
        return new Window(windowNumbers[w] * WINDOW_MILLIS, List.copyOf(rows), untracked[w].clone());
    }
}
