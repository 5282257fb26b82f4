/**
 * A node's part in the regions' exchange (docs/regions.md): {@link dev.limiter.server.region.RegionConfig}
 * (which region, the other regions' admin addresses, the exchange's token),
 * {@link dev.limiter.server.region.ShareAllocator} (when a region may lower or raise its share of a
 * regional policy, so that the shares never sum above the whole) and
 * {@link dev.limiter.server.region.RegionExchange} (asks the other regions, proposes the region's
 * shares to its own log, answers their questions, and gives the shards the shares they decide with).
 * Above {@code admin} (it answers through {@code NodeStatus}); uses {@code engine} and {@code control}.
 */
package dev.limiter.server.region;
