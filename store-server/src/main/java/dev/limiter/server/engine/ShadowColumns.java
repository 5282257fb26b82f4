package dev.limiter.server.engine;

/**
 * A frame's SHADOW evaluations in columns: the keys, policies, costs and shards of {@link KeyColumns},
 * and per evaluation the entry it shadows, the lease it took (a shadow concurrency limit), and what the
 * comparison with the enforced answer needs ({@link ShadowCompareTable}): its key there
 * ({@code u8 tenant length | tenant | route} in the frame's key buffer) and that key's hash, written by
 * the router; whether the shadow was evaluated and what it would have answered, written by its shard.
 */
final class ShadowColumns extends KeyColumns
{
    int[] entry;
    boolean[] leased;
    long[] leaseId;
    int[] leaseCheck;
    int[] compareOffset;
    int[] compareLength;
    long[] compareHash;
    boolean[] evaluated;
    boolean[] wouldAllow;

    ShadowColumns(final int capacity)
    {
        super(capacity, true);
        allocateShadows(capacity);
    }

    @Override
    void ensure(final int keys)
    {
        if (capacity() < keys)
        {
            super.ensure(keys);
            allocateShadows(keys);
        }
    }

    private void allocateShadows(final int capacity)
    {
        entry = new int[capacity];
        leased = new boolean[capacity];
        leaseId = new long[capacity];
        leaseCheck = new int[capacity];
        compareOffset = new int[capacity];
        compareLength = new int[capacity];
        compareHash = new long[capacity];
        evaluated = new boolean[capacity];
        wouldAllow = new boolean[capacity];
    }
}
