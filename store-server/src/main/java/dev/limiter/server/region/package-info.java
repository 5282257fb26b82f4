/**
 * A node's part in the regions' exchange (docs/regions.md). {@link dev.limiter.server.region.RegionExchange}
 * builds the parts and runs their tick; each part has one role:
 * <ul>
 * <li>{@link dev.limiter.server.region.RegionConfig}: which region, the other regions' admin addresses,
 *     the exchange's token;</li>
 * <li>{@link dev.limiter.server.region.ShareAllocator}: when a region may lower or raise its share of a
 *     regional policy, so that the shares never sum above the whole (pure);</li>
 * <li>{@link dev.limiter.server.region.NodeShares}: the shares this node holds (committed, proposed,
 *     each group's copy), what each group's shards decide with and what the region reports;</li>
 * <li>{@link dev.limiter.server.region.RegionGroups}, {@link dev.limiter.server.region.ShareHistory} and
 *     {@link dev.limiter.server.region.GroupCopier}: with several Raft groups, each group's copy of the
 *     shares, what the region must report while a copy is older than its control group's shares, and
 *     the copying into the groups this node leads;</li>
 * <li>{@link dev.limiter.server.region.ReportEndpoint} and {@link dev.limiter.server.region.ReportBody}:
 *     the report this node serves, and its format and bound on the wire;</li>
 * <li>{@link dev.limiter.server.region.PeerPoller} and {@link dev.limiter.server.region.HeardReports}:
 *     asking the other regions' nodes, and what they said;</li>
 * <li>{@link dev.limiter.server.region.DemandMeter}: the decisions per second this node's shards are
 *     asked of each regional policy;</li>
 * <li>{@link dev.limiter.server.region.ShareMover}: the control group's leader proposes the region's
 *     shares to its own log.</li>
 * </ul>
 * Above {@code admin} (it answers through {@code NodeStatus}); uses {@code engine} and {@code control}.
 */
package dev.limiter.server.region;
