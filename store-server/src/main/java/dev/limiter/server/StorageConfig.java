package dev.limiter.server;

import java.nio.file.Path;

/**
 * The files a node reads and keeps: its data directory (the Raft log and snapshots of a cluster
 * member, the generated admin token) and the policy file it starts from.
 *
 * @param dataDir      the node's own directory
 * @param policiesFile policy file (protobuf JSON of a PolicySet); null serves only the default baseline
 */
public record StorageConfig(Path dataDir, Path policiesFile)
{
    /** Storage's defaults. */
    public static final class Defaults
    {
        /** The parent of every node's default data directory, {@code data/<node id>}. */
        public static final Path DATA_ROOT = Path.of("data");
        /** The data directory's name on a single node (no node id). */
        public static final String SINGLE_NODE_DIR = "node";

        private Defaults()
        {
        }

        /** {@code data/<node id>}, or {@code data/node} on a single node. */
        public static Path dataDir(final String nodeId)
        {
            return DATA_ROOT.resolve(nodeId == null ? SINGLE_NODE_DIR : nodeId);
        }
    }

    public StorageConfig
    {
        Settings.require(dataDir != null, "a data directory is required (--data-dir)");
    }

    /** Where a cluster member's Raft log and snapshots live. */
    public Path raftDir()
    {
        return dataDir.resolve("raft");
    }
}
