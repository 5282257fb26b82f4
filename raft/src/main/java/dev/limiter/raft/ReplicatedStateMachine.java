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

    /**
     * Captures the whole state as of the last applied entry, for a snapshot. Entries wait while this
     * runs, so it should copy, not encode: the result is written to disk later, on another thread.
     */
    CapturedState captureSnapshot();

    /** Replaces the whole state with one written by a {@link CapturedState}. */
    void restoreSnapshot(InputStream in) throws IOException;

    /** Clears the state (before a snapshot or a log replay from the start). */
    void reset();

    /** A state captured for a snapshot: written once, from a thread other than the one applying entries, then closed. */
    interface CapturedState extends AutoCloseable
    {
        /** Writes the captured state in the form {@link #restoreSnapshot} reads. */
        void writeTo(OutputStream out) throws IOException;

        /** Frees what the capture holds (called after the write, or instead of it). */
        @Override
        void close();
    }
}
