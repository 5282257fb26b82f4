package dev.limiter.server.engine;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A shard's counts per policy ordinal, one row per policy and one column per kind, in one array:
 * written by the shard's owner thread only (no count is lost to a race or to growth), read by any
 * thread (metrics, regions' demand reports). A row past the end reads 0 and grows the array on its
 * first write.
 */
final class PolicyCounters
{
    /** Decisions allowed. */
    static final int ALLOWED = 0;
    /** Decisions refused. */
    static final int DENIED = 1;
    /** Decisions allowed beyond the limit, within its soft overage. */
    static final int OVERAGE = 2;
    /** Releases that freed a held lease. */
    static final int RELEASED = 3;
    /** Releases naming a lease the key does not hold (nothing freed). */
    static final int RELEASE_UNKNOWN = 4;
    /** Releases whose lease had expired (nothing more freed). */
    static final int RELEASE_EXPIRED = 5;
    /** A shadow policy's decisions that would have allowed. */
    static final int SHADOW_ALLOWED = 6;
    /** A shadow policy's decisions that would have refused. */
    static final int SHADOW_DENIED = 7;
    /** What this shard's share of a split policy held after its last decision, whole tokens + 1 (0: none yet). */
    static final int SHARE_TOKENS = 8;
    private static final int KINDS = 9;

    private volatile AtomicLongArray counts = new AtomicLongArray(16 * KINDS);

    /** Adds one to {@code kind} of {@code ordinal}. Owner thread only. */
    void increment(final int ordinal, final int kind)
    {
        final AtomicLongArray row = writable(ordinal);
        final int index = ordinal * KINDS + kind;
        row.lazySet(index, row.get(index) + 1);
    }

    /** Sets {@code kind} of {@code ordinal}, writing only on a change. Owner thread only. */
    void set(final int ordinal, final int kind, final long value)
    {
        final AtomicLongArray row = writable(ordinal);
        final int index = ordinal * KINDS + kind;
        if (row.get(index) != value)
        {
            row.lazySet(index, value);
        }
    }

    /** {@code kind} of {@code ordinal}; 0 for a policy never counted. Any thread. */
    long get(final int ordinal, final int kind)
    {
        final AtomicLongArray current = counts;
        final int index = ordinal * KINDS + kind;
        return ordinal >= 0 && index < current.length() ? current.get(index) : 0;
    }

    private AtomicLongArray writable(final int ordinal)
    {
        final AtomicLongArray current = counts;
        if ((ordinal + 1) * KINDS <= current.length())
        {
            return current;
        }
        final AtomicLongArray grown = new AtomicLongArray(Math.max(ordinal + 1, 2 * current.length() / KINDS) * KINDS);
        for (int i = 0; i < current.length(); i++)
        {
            grown.lazySet(i, current.get(i));
        }
        counts = grown;
        return grown;
    }
}
