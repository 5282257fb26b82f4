/**
 * A node's part in the regions' exchange (docs/regions.md): {@link dev.limiter.server.region.RegionConfig}
 * (which region, the other regions' admin addresses, the exchange's token),
 * {@link dev.limiter.server.region.ShareAllocator} (when a region may lower or raise its share of a
 * regional policy, so that the shares never sum above the whole),
 * {@link dev.limiter.server.region.RegionGroups} and {@link dev.limiter.server.region.ShareHistory}
 * (with several Raft groups: each group's copy of the shares, and what the region must report while
 * a copy is older than its control group's shares) and
 * {@link dev.limiter.server.region.RegionExchange} (asks the other regions, proposes the region's
 * shares to its own log, copies them into the groups this node leads, answers the other regions'
 * questions, and gives each group's shards the shares they decide with).
 * Above {@code admin} (it answers through {@code NodeStatus}); uses {@code engine} and {@code control}.
 */
package dev.limiter.server.region;
