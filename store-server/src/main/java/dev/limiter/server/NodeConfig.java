package dev.limiter.server;

import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.region.RegionConfig;

/**
 * A node's settings, one record per concern. Each record checks its own values when it is built;
 * this one checks the rules that join two of them. {@code ./limiter server} fills them from its
 * flags ({@link ServerMain}); embedders and tests may use {@link ServerConfig}.
 *
 * @param dataPort the data port, its transport and connection limits (its host is the admin port's too)
 * @param admin    the admin HTTP port
 * @param shards   the shards
 * @param cluster  replication ({@link ClusterConfig#SINGLE_NODE} on a single node)
 * @param tls      TLS on every port ({@link TlsConfig#OFF} for plain TCP)
 * @param region   the region this node belongs to and how it reaches the others; null: no regions
 *                 (regional policies are decided whole)
 * @param storage  the data directory and the policy file
 */
public record NodeConfig(
    DataPortConfig dataPort,
    AdminConfig admin,
    ShardConfig shards,
    ClusterConfig cluster,
    TlsConfig tls,
    RegionConfig region,
    StorageConfig storage)
{
    public NodeConfig
    {
        Settings.require(dataPort != null && admin != null && shards != null && cluster != null && tls != null &&
            storage != null, "every group of settings is required (only the region may be left out)");
        Settings.require(!cluster.clustered() || !tls.enabled() || tls.ca() != null,
            "a cluster with TLS needs --tls-ca: members verify each other's certificates on the Raft port " +
                "(mutual TLS)");
        if (cluster.clustered())
        {
            Settings.require(!shards.ownThreads(),
                "--shard-threads is not supported in a cluster: shards live on the event loops");
            Settings.require(cluster.raftGroups() >= 1 && cluster.raftGroups() <= shards.count(),
                "--raft-groups must be 1 to --shards (" + shards.count() + "): each group owns at least one shard; " +
                    "was " + cluster.raftGroups());
        }
    }

    /** Whether this node is a member of a replicated cluster. */
    public boolean clustered()
    {
        return cluster.clustered();
    }

    /** The id this node reports and signs its commands with: its node id, or "single". */
    public String nodeName()
    {
        return cluster.clustered() ? cluster.nodeId() : "single";
    }

    /**
     * This member's Raft settings ({@link ClusterConfig#raftNodeConfig}): its log under the data
     * directory, and a Raft connection's preface due within the frame timeout.
     */
    public RaftNodeConfig raftNodeConfig()
    {
        return cluster.raftNodeConfig(storage.raftDir(), dataPort.frameTimeoutMillis());
    }
}
