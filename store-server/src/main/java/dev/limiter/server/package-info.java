/**
 * One node, wired: {@link dev.limiter.server.StoreServer} builds the parts below from a
 * {@link dev.limiter.server.NodeConfig} (one settings record per concern, each with its defaults;
 * {@link dev.limiter.server.ServerConfig} assembles one setting by setting) and starts them;
 * {@link dev.limiter.server.ServerMain} is {@code ./limiter server}. Nothing in the sub-packages
 * depends on this one (checked by the build's ArchitectureTest, with every other package rule of the
 * project).
 *
 * <p>The packages are layered; each depends only on packages below it:
 * <pre>
 *   region    the regions' exchange: shares of regional policies
 *   admin     HTTP API, token
 *   net       data port: pipeline, frame decoding, the connection handler
 *   engine    routing a frame to shards, deciding, the shards' log writers
 *   metrics   the registry and the counters the others record into
 *   cluster   replication, apply, snapshots, membership
 *   control   policies, exemptions, audit        table   the off-heap bucket table
 * </pre>
 */
package dev.limiter.server;
