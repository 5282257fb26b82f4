package dev.limiter.server.control;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyVersion;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * One policy id in the {@link PolicyCatalogue}: its versions, oldest first (version n at index
 * n - 1), the limits each version's buckets refill at and whether each splits its budget across
 * shards, and the ordinals the id holds (one per mode, for the life of the cluster). Versions are
 * only appended, or marked blocked. Guarded by the catalogue.
 */
final class CataloguedPolicy
{
    final String id;
    final List<PolicyVersion> versions = new ArrayList<>();
    /** Every limit of each version (its own first, then its extra limits). */
    final List<Limit[]> rates = new ArrayList<>();
    /** Whether each version's budget is split into per-shard shares ({@link CompiledPolicy#splitsAcrossShards}). */
    final List<Boolean> split = new ArrayList<>();
    /**
     * Whether this node decides against a region's share of regional policies (their rates then
     * count thousandths of a token).
     */
    private final boolean regions;
    private int enforceOrdinal = -1;
    private int shadowOrdinal = -1;

    CataloguedPolicy(final String id, final boolean regions)
    {
        this.id = id;
        this.regions = regions;
    }

    void add(final PolicyVersion version)
    {
        versions.add(version);
        // A tombstone keeps the rate of what it deleted: buckets of that version still refill.
        final Policy policy = version.getPolicy();
        rates.add(version.getDeleted() && !rates.isEmpty() ? rates.get(rates.size() - 1) : PolicySetIndex.limitsOf(
            regions && policy.hasRegional() ? PolicySetIndex.scaledForRegions(policy) : policy));
        split.add(version.getDeleted() && !split.isEmpty() ? split.get(split.size() - 1) :
            CompiledPolicy.splitsAcrossShards(policy));
    }

    /** Version {@code index + 1} never comes into force (the set would be invalid with it). */
    void block(final int index)
    {
        versions.set(index, versions.get(index).toBuilder().setBlocked(true).build());
    }

    /** The ordinal this id holds in one mode, or -1 before it is assigned. */
    int ordinal(final boolean shadow)
    {
        return shadow ? shadowOrdinal : enforceOrdinal;
    }

    void holdOrdinal(final boolean shadow, final int ordinal)
    {
        if (shadow)
        {
            shadowOrdinal = ordinal;
        }
        else
        {
            enforceOrdinal = ordinal;
        }
    }

    /** The ordinals assigned (enforced, shadow); empty when none. */
    int[] ordinals()
    {
        return IntStream.of(enforceOrdinal, shadowOrdinal).filter(o -> o >= 0).toArray();
    }
}
