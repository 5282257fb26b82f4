package dev.limiter.server.cluster;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The one owner of the SYNC log entry: the marker a new leader appends before it decides. Every
 * replica applies it in log order; the node that wrote it copies the committed tables into its
 * deciding ones when it applies it (everything logged before is then in them).
 *
 * <pre>
 * u8 2 | i64 term | u16 node id length | node id (UTF-8) | i64 submission
 * </pre>
 * The submission is the marker's place in its writer's order of entries (batches submitted after
 * it are replayed on top of the copy). Markers written before it existed end after the id and
 * read as {@link Long#MAX_VALUE}: they say nothing about later batches.
 *
 * @param term       the Raft term the marker was written in
 * @param nodeId     the node that wrote it
 * @param submission its place in that node's submissions
 */
public record SyncEntry(long term, String nodeId, long submission)
{
    /** First byte of the entry. */
    public static final byte TYPE = 2;
    private static final int FIXED_BYTES = 1 + 8 + 2;

    /** The entry's bytes (position 0, limit its length). */
    public ByteBuffer encode()
    {
        final byte[] id = nodeId.getBytes(StandardCharsets.UTF_8);
        if (id.length > 0xFFFF)
        {
            throw new IllegalArgumentException("node id of " + id.length + " bytes; at most 65535");
        }
        return ByteBuffer.allocate(FIXED_BYTES + id.length + 8).put(TYPE).putLong(term).putShort((short)id.length).put(id)
            .putLong(submission).flip();
    }

    /**
     * Reads an entry from {@code entry}'s position (not moved).
     *
     * @throws IllegalArgumentException when it is not a SYNC entry or is cut short
     */
    public static SyncEntry decode(final ByteBuffer entry)
    {
        final int at = entry.position();
        if (entry.remaining() < FIXED_BYTES || entry.get(at) != TYPE)
        {
            throw new IllegalArgumentException("not a SYNC entry (" + entry.remaining() + " bytes, type " +
                (entry.hasRemaining() ? entry.get(at) : -1) + ")");
        }
        final long term = entry.getLong(at + 1);
        final int idLength = entry.getShort(at + 9) & 0xFFFF;
        if (entry.remaining() < FIXED_BYTES + idLength)
        {
            throw new IllegalArgumentException("SYNC entry cut short: a " + idLength + "-byte node id in " + entry.remaining() + " bytes");
        }
        final byte[] id = new byte[idLength];
        entry.get(at + FIXED_BYTES, id);
        final long submission = entry.remaining() >= FIXED_BYTES + idLength + 8 ? entry.getLong(at + FIXED_BYTES + idLength) : Long.MAX_VALUE;
        return new SyncEntry(term, new String(id, StandardCharsets.UTF_8), submission);
    }
}
