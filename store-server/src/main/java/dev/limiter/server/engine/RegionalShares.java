package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.PolicySetIndex;

/**
 * A region's shares of regional policies, as its shards decide with them (docs/regions.md). A
 * regional policy's limit is counted in thousandths of a token ({@link PolicySetIndex#scaledForRegions})
 * and never changes with the share; a request costs {@code cost x 1000 / share} of it instead, so a
 * share can move at any time without changing what a bucket's stored tokens mean, and a replica
 * replays the cost the leader logged.
 */
public interface RegionalShares
{
    /** Millionths of a whole share. */
    int WHOLE = 1_000_000;

    /** This region's share of {@code policy} to decide with now, in millionths (0 to {@link #WHOLE}). */
    int sharePpm(CompiledPolicy policy);

    /** The policy's limit as a region counts it (thousandths of a token) on shard {@code shard} of {@code shards}, or null if unknown. */
    Limit limit(CompiledPolicy policy, int shard, int shards);

    /**
     * Thousandths of a token that a request of {@code cost} tokens takes at a share of {@code sharePpm}
     * (rounded up, so a region never takes more than its share), or -1 when the share cannot hold it
     * (no share, or more than the region's whole burst, or beyond a log record's cost).
     */
    static long costAtShare(final long cost, final int sharePpm, final Limit limit)
    {
        if (sharePpm <= 0 || limit == null)
        {
            return -1;
        }
        final long units = (cost * PolicySetIndex.REGIONAL_SCALE * WHOLE + sharePpm - 1) / sharePpm;
        return units > limit.burstTokens() || units > Integer.MAX_VALUE ? -1 : units;
    }
}
