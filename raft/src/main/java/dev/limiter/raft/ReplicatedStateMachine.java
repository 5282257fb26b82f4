package dev.limiter.raft;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;

/**
 * What an application replicates through a {@link RaftNode}. Every method is called from one
 * thread, in log order; an implementation needs no locking against itself.
 *
 * <p>Determinism: {@link #apply} must change state only from its arguments (never a local clock,
 * random numbers or iteration order of hash maps), so every replica that applies the same log holds
 * the same state.
 */
public interface ReplicatedStateMachine
{
    /**
     * Applies one committed entry.
     *
     * @param index        the entry's log index (strictly increasing)
     * @param clusterNanos the cluster time the leader stamped on the entry, in nanoseconds
     *                     (non-decreasing across the log, also across leader changes)
     * @param payload      the bytes given to {@link RaftNode#submit}, read-only
     * @return bytes returned to the submitter (may be empty)
     */
    ByteBuffer apply(long index, long clusterNanos, ByteBuffer payload);

    /** Writes the whole state, as of the last applied entry, to {@code out}. */
    void writeSnapshot(OutputStream out) throws IOException;

    /** Replaces the whole state with one written by {@link #writeSnapshot}. */
    void restoreSnapshot(InputStream in) throws IOException;

    /** Clears the state (before a snapshot or a log replay from the start). */
    void reset();
}
