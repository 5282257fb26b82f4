package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * Body of RESULT and BATCH_RESULT frames: fixed-size records (so that several shard threads can
 * fill disjoint records of one response in place), then a dictionary of the policies they name.
 *
 * <pre>
 * u16 count | u16 reserved (0) | count x record (48 bytes) | u16 policies | policies x policy
 *           [ | u16 leases | leases x lease [ | u16 refusals | refusals x refusal [ | decision ids ]]]
 * record:  u8 flags (bit 0: allowed, bit 1: holds a lease, bit 2: hot key) | u8 reason | u16 policy ref | u32 window (s)
 *          | i64 remaining (whole tokens) | i64 limit (burst, tokens)
 *          | i64 retry-after (ns; -1: never) | i64 reset-after (ns) | i64 policy version
 * policy:  u16 ref | u8 len | id (UTF-8)
 * lease:   u16 record | i64 lease id | u32 check (which limits and versions took it; a RELEASE returns it)
 * </pre>
 *
 * Record {@code i} answers entry {@code i} of the request. The lease section is there only when a
 * record holds a lease (a grant of a concurrency limit: give it back with a RELEASE naming the
 * lease id), so frames without leases are exactly as before leases existed. The hot-key flag says
 * the node decides this record's key at its policy's {@code tokenLease.hotRate} or more: SDKs may
 * take token blocks of it (readers that do not know the flag ignore it). The decision-id section
 * ({@link DecisionIds}, which owns its layout) goes only to a peer that listed
 * {@link Features#DECISION_IDS}; the lease and refusal sections are then written even when empty.
 */
public final class ResultCodec
{
    public static final int RECORD_LENGTH = 48;
    public static final int BATCH_HEADER_LENGTH = 4;
    /** Retry-after value meaning "retrying can never succeed" (cost above burst). */
    public static final long NEVER = -1L;

    static final int FLAGS_OFFSET = 0;
    static final int ALLOWED_FLAG = 1;
    static final int LEASE_FLAG = 2;
    static final int HOT_KEY_FLAG = 4;
    /** Bytes of one entry of the lease section. */
    public static final int LEASE_LENGTH = 14;
    static final int REASON_OFFSET = 1;
    static final int POLICY_REF_OFFSET = 2;
    static final int WINDOW_OFFSET = 4;
    static final int REMAINING_OFFSET = 8;
    static final int LIMIT_OFFSET = 16;
    static final int RETRY_AFTER_OFFSET = 24;
    static final int RESET_AFTER_OFFSET = 32;
    static final int POLICY_VERSION_OFFSET = 40;

    private ResultCodec()
    {
    }

    /** Bytes a result frame of {@code count} records needs before its policy dictionary. */
    public static int recordsEnd(final int count)
    {
        return Frame.HEADER_LENGTH + BATCH_HEADER_LENGTH + count * RECORD_LENGTH;
    }

    /**
     * Starts a result frame with room for {@code count} records (the writer index moves past them,
     * their content is filled in with {@link #putRecord}); returns the frame start.
     */
    public static int beginBatch(final ByteBuf out, final int type, final long correlationId, final int count)
    {
        final int start = Frame.begin(out, type, correlationId);
        out.writeShort(count);
        out.writeShort(0);
        out.writeZero(count * RECORD_LENGTH); // no stale bytes from a pooled buffer, ever
        return start;
    }

    /** Index of record {@code i} in a frame that starts at {@code frameStart}. */
    public static int recordOffset(final int frameStart, final int i)
    {
        return frameStart + Frame.HEADER_LENGTH + BATCH_HEADER_LENGTH + i * RECORD_LENGTH;
    }

    /** Writes one record at an absolute index; does not move the writer index. */
    public static void putRecord(
        final ByteBuf out,
        final int recordOffset,
        final boolean allowed,
        final ReasonCode reason,
        final int policyRef,
        final long remaining,
        final long limit,
        final long retryAfterNanos,
        final long resetAfterNanos,
        final long policyVersion,
        final long windowSeconds)
    {
        out.setByte(recordOffset + FLAGS_OFFSET, allowed ? ALLOWED_FLAG : 0);
        out.setByte(recordOffset + REASON_OFFSET, reason.code());
        out.setShort(recordOffset + POLICY_REF_OFFSET, policyRef);
        out.setInt(recordOffset + WINDOW_OFFSET, (int)Math.min(windowSeconds, 0xFFFF_FFFFL));
        out.setLong(recordOffset + REMAINING_OFFSET, remaining);
        out.setLong(recordOffset + LIMIT_OFFSET, limit);
        out.setLong(recordOffset + RETRY_AFTER_OFFSET, retryAfterNanos);
        out.setLong(recordOffset + RESET_AFTER_OFFSET, resetAfterNanos);
        out.setLong(recordOffset + POLICY_VERSION_OFFSET, policyVersion);
    }

    /** Whether the record written at an absolute index allows its request. */
    public static boolean allowed(final ByteBuf buf, final int recordOffset)
    {
        return (buf.getByte(recordOffset + FLAGS_OFFSET) & ALLOWED_FLAG) != 0;
    }

    /** Marks a written record as holding a lease (listed in the lease section). */
    public static void markLease(final ByteBuf out, final int recordOffset)
    {
        out.setByte(recordOffset + FLAGS_OFFSET, out.getByte(recordOffset + FLAGS_OFFSET) | LEASE_FLAG);
    }

    /** Marks a written record's key as hot: decided at its policy's {@code tokenLease.hotRate} or more. */
    public static void markHotKey(final ByteBuf out, final int recordOffset)
    {
        out.setByte(recordOffset + FLAGS_OFFSET, out.getByte(recordOffset + FLAGS_OFFSET) | HOT_KEY_FLAG);
    }

    /** Appends the lease section's header (after the dictionary); follow with {@code count} calls to {@link #appendLease}. */
    public static void beginLeases(final ByteBuf out, final int count)
    {
        out.writeShort(count);
    }

    /** Appends one lease: the record that holds it, its id and its check. */
    public static void appendLease(final ByteBuf out, final int record, final long leaseId, final int check)
    {
        out.writeShort(record);
        out.writeLong(leaseId);
        out.writeInt(check);
    }

    /** Longest reason of a refused entry, in UTF-8 bytes (a longer one is cut). */
    public static final int MAX_REFUSAL_BYTES = 1024;

    /**
     * Appends the refusal section's header (after the lease section, which is then written even when
     * it lists none); follow with {@code count} calls to {@link #appendRefusal}.
     */
    public static void beginRefusals(final ByteBuf out, final int count)
    {
        out.writeShort(count);
    }

    /** Appends why record {@code record} (answered {@link ReasonCode#INVALID_REQUEST}) was not decided. */
    public static void appendRefusal(final ByteBuf out, final int record, final String why)
    {
        byte[] utf8 = why.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (utf8.length > MAX_REFUSAL_BYTES)
        {
            utf8 = java.util.Arrays.copyOf(utf8, MAX_REFUSAL_BYTES);
        }
        out.writeShort(record);
        out.writeShort(utf8.length);
        out.writeBytes(utf8);
    }

    /** The reason code of a written record. */
    public static int reasonCode(final ByteBuf buf, final int recordOffset)
    {
        return buf.getUnsignedByte(recordOffset + REASON_OFFSET);
    }

    /** The policy version of a written record. */
    public static long policyVersion(final ByteBuf buf, final int recordOffset)
    {
        return buf.getLong(recordOffset + POLICY_VERSION_OFFSET);
    }

    /** Policy ref stored in a record (for building the dictionary). */
    public static int policyRef(final ByteBuf buf, final int recordOffset)
    {
        return buf.getUnsignedShort(recordOffset + POLICY_REF_OFFSET);
    }

    /** Appends the dictionary header; follow with {@code count} calls to {@link #appendPolicy}. */
    public static void beginPolicies(final ByteBuf out, final int count)
    {
        out.writeShort(count);
    }

    /** Appends one dictionary entry; {@code idUtf8} at most 255 bytes. */
    public static void appendPolicy(final ByteBuf out, final int ref, final byte[] idUtf8)
    {
        out.writeShort(ref);
        out.writeByte(idUtf8.length);
        out.writeBytes(idUtf8);
    }
}
