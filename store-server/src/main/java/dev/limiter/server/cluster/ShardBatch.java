package dev.limiter.server.cluster;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * One shard's decisions on their way into its group's log: a DECISIONS section
 * ({@link DecisionsEntry}) that the group's {@link LogSubmitter} joins with the other shards'
 * sections into one log entry. Written by the shard, numbered by the submitter, completed by Raft.
 */
public final class ShardBatch
{
    /** {@link #submission()} of a batch not handed to the log yet: it reaches the log after any marker sent so far. */
    public static final long NOT_SUBMITTED = Long.MAX_VALUE;

    private final ByteBuffer section;
    private final int decisions;
    private final boolean awaited;
    private final CompletableFuture<Void> committed = new CompletableFuture<>();
    private volatile long submission = NOT_SUBMITTED;

    /**
     * @param section   the section, from its header to its last record (not copied: the caller hands it over)
     * @param decisions the records it holds
     * @param awaited   whether a caller waits for its commit (a STRICT decision), so it should not wait for a slot
     */
    public ShardBatch(final ByteBuffer section, final int decisions, final boolean awaited)
    {
        this.section = section; // kept array-backed: Ratis wraps it without a copy (nothing writes to it once handed over)
        this.decisions = decisions;
        this.awaited = awaited;
    }

    /** The section, positioned at its header (a fresh view each call; read it, never write to it). */
    public ByteBuffer section()
    {
        return section.duplicate();
    }

    /** Bytes of the section. */
    public int bytes()
    {
        return section.remaining();
    }

    public int decisions()
    {
        return decisions;
    }

    boolean awaited()
    {
        return awaited;
    }

    /**
     * The place of the entry carrying this batch in this node's order of submissions to the log,
     * or {@link #NOT_SUBMITTED} (any thread).
     */
    public long submission()
    {
        return submission;
    }

    void submitted(final long number)
    {
        submission = number;
    }

    /** Completes when the entry carrying this batch is committed and applied here, or fails. */
    public CompletableFuture<Void> committed()
    {
        return committed;
    }
}
