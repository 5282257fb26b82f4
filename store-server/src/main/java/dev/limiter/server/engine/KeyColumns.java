package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;

/**
 * One group of a frame's keys in columns: where each key's bytes are in the frame's key buffer,
 * its hash, the policy it is decided under, and (for requests and shadow evaluations) its cost and
 * shard. A {@link FrameWork} has three such groups: its requests, their stacked parts, and their
 * shadow evaluations ({@link ShadowColumns}, which add what a shadow needs of its own). Sized at the
 * frame's start ({@link #ensure}), reused from frame to frame.
 */
class KeyColumns
{
    int[] keyOffset;
    int[] keyLength;
    long[] keyHash;
    CompiledPolicy[] policy;
    /** Tokens asked; empty when the group has no costs of its own (stacked parts take their request's). */
    int[] cost;
    /** The shard that decides each key; empty when the group has none of its own. */
    int[] shard;
    private final boolean costsAndShards;

    KeyColumns(final int capacity, final boolean costsAndShards)
    {
        this.costsAndShards = costsAndShards;
        allocate(capacity);
    }

    int capacity()
    {
        return keyOffset.length;
    }

    /** Makes room for {@code keys}, dropping what the columns held (called before a frame fills them). */
    void ensure(final int keys)
    {
        if (keyOffset.length < keys)
        {
            allocate(keys);
        }
    }

    /** Lets go of the policies of the first {@code count} keys (a pooled frame holds no stale policy set). */
    void clear(final int count)
    {
        java.util.Arrays.fill(policy, 0, count, null);
    }

    private void allocate(final int capacity)
    {
        keyOffset = new int[capacity];
        keyLength = new int[capacity];
        keyHash = new long[capacity];
        policy = new CompiledPolicy[capacity];
        cost = costsAndShards ? new int[capacity] : new int[0];
        shard = costsAndShards ? new int[capacity] : new int[0];
    }
}
