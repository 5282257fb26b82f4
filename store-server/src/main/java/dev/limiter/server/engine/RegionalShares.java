package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.PolicySetIndex;

/**
 * A region's shares of regional policies, as its shards decide with them (docs/regions.md). A
 * regional policy's limit is counted in thousandths of a token ({@link PolicySetIndex#scaledForRegions})
 * and never changes with the share; a request of one token costs {@code 1000 / share} of them
 * instead (rounded up), so a share can move at any time without changing what a bucket's stored
 * tokens mean, and a replica replays the cost the leader logged.
 */
public interface RegionalShares
{
    /** Millionths of a whole share. */
    int WHOLE = 1_000_000;

    /**
     * Thousandths of a token one token of a request costs at this region's share of {@code policy}
     * now ({@code 1000 x 1,000,000 / share}, rounded up), or -1 when the region holds no share of it.
     * Read for every decision of a regional policy: a plain array read.
     */
    long unitsPerToken(CompiledPolicy policy);

    /** The policy's limit as a region counts it (thousandths of a token) on shard {@code shard} of {@code shards}, or null if unknown. */
    Limit limit(CompiledPolicy policy, int shard, int shards);

    /** {@link #unitsPerToken} at a share of {@code sharePpm} millionths (-1 for none). */
    static long unitsPerToken(final int sharePpm)
    {
        return sharePpm <= 0 ? -1 : (PolicySetIndex.REGIONAL_SCALE * WHOLE + sharePpm - 1) / sharePpm;
    }

    /**
     * What a request of {@code cost} tokens takes of the limit at {@code unitsPerToken}, or -1 when the
     * share cannot hold it (no share, more than the region's whole burst, or beyond a log record's cost).
     */
    static long cost(final long cost, final long unitsPerToken, final Limit limit)
    {
        if (unitsPerToken <= 0 || limit == null || cost > Integer.MAX_VALUE / unitsPerToken)
        {
            return -1;
        }
        final long units = cost * unitsPerToken;
        return units > limit.burstTokens() ? -1 : units;
    }
}
