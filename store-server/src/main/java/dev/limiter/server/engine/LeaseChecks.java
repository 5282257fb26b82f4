package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;

/**
 * The check a lease carries: which limits took it, folded in order. A grant folds every limit that
 * took its lease; a release folds the limits that would lease now and gives back nothing unless it
 * gets the same (a version changed since: the lease stays in the old version's keys until it
 * expires, and never frees a lease of the new one).
 */
final class LeaseChecks
{
    /** The check before any limit is folded in. */
    static final int SEED = 1;

    private LeaseChecks()
    {
    }

    /** {@code check} folded with one leasing limit: its policy, version and limit index. */
    static int fold(final int check, final CompiledPolicy policy)
    {
        return 31 * check
            + Long.hashCode(((long)policy.ordinal() << 32) ^ policy.version() ^ ((long)policy.limitIndex() << 28));
    }

    /**
     * The check entry {@code i} of {@code work}'s lease would be granted under now: its own policy and
     * parts that lease, else a leasing shadow's (a shadow's lease the grant adopted). Router thread,
     * before the shards run.
     */
    static int current(final FrameWork work, final int i)
    {
        final CompiledPolicy own = work.entries.policy[i];
        boolean any = own.limit().leases();
        int check = any ? fold(SEED, own) : SEED;
        final int partsOfEntry = work.stacked ? work.stackCount[i] : 0;
        for (int k = 0; k < partsOfEntry; k++)
        {
            final CompiledPolicy part = work.parts.policy[work.stackFrom[i] + k];
            if (part.limit().leases())
            {
                check = fold(check, part);
                any = true;
            }
        }
        final ShadowColumns shadows = work.shadows;
        for (int j = 0; j < work.shadowCount && !any; j++)
        {
            if (shadows.entry[j] == i && shadows.policy[j].limit().leases())
            {
                return fold(SEED, shadows.policy[j]);
            }
        }
        return check;
    }

    /**
     * Whether entry {@code i}'s grant may take a lease: its policy, a stacked part or a shadow of it
     * is a concurrency limit. Asked by the router right after it routed entry {@code i}.
     */
    static boolean mayLease(final FrameWork work, final int i)
    {
        if (work.entries.policy[i].limit().leases())
        {
            return true;
        }
        final int partsOfEntry = work.stacked ? work.stackCount[i] : 0;
        for (int k = 0; k < partsOfEntry; k++)
        {
            if (work.parts.policy[work.stackFrom[i] + k].limit().leases())
            {
                return true;
            }
        }
        // Asked as entry i is routed: its shadows are the last ones added.
        final ShadowColumns shadows = work.shadows;
        for (int j = work.shadowCount - 1; j >= 0 && shadows.entry[j] == i; j--)
        {
            if (shadows.policy[j].limit().leases())
            {
                return true;
            }
        }
        return false;
    }
}
