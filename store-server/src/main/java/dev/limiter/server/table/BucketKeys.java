package dev.limiter.server.table;

import dev.limiter.protocol.CompiledPolicy;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;

/**
 * The prefix every bucket key starts with: {@code u16 policy ordinal | u32 policy version}
 * (big-endian), so that a new version starts new buckets and a replica replays (and sweeps) a
 * bucket with the limit of the version it was made under. The version's top 4 bits say which of
 * the policy's limits the bucket is for (0: its own; k: its extra limit k - 1), so a policy with
 * several limits keeps a bucket per limit; versions therefore stay below 2^28. What follows the
 * prefix is the scope part, written by the engine's frame router.
 *
 * <p>A held lease of a concurrency limit has a record of its own beside its limit's key
 * ({@link #putLeaseKey}): the limit's prefix with {@link #LEASE_BIT} set, the limit key's hash and
 * the lease's id. Its state is the lease's cost and its time the grant's.
 */
public final class BucketKeys
{
    /** Bytes of the prefix. */
    public static final int PREFIX_LENGTH = 6;

    private BucketKeys()
    {
    }

    /** Largest policy version a key can carry. */
    public static final long MAX_VERSION = CompiledPolicy.MAX_VERSION;
    private static final int LIMIT_INDEX_SHIFT = 28;
    /** The top bit of the version field: the key is a lease's record, not a limit's bucket. */
    public static final long LEASE_BIT = 1L << 31;
    /** Bytes of a lease's record key: the prefix, the limit key's hash, the lease id. */
    public static final int LEASE_KEY_LENGTH = PREFIX_LENGTH + 8 + 8;

    /** Writes the prefix of a bucket of the policy's own limit at {@code at}. */
    public static void putPrefix(final MutableDirectBuffer key, final int at, final int ordinal, final long version)
    {
        putPrefix(key, at, ordinal, version, 0);
    }

    /** Writes the prefix at {@code at}: {@code limitIndex} 0 for the policy's own limit, k for its extra limit k - 1. */
    public static void putPrefix(final MutableDirectBuffer key, final int at, final int ordinal, final long version, final int limitIndex)
    {
        key.putShort(at, (short)ordinal, ByteOrder.BIG_ENDIAN);
        key.putInt(at + 2, (int)(version | (long)limitIndex << LIMIT_INDEX_SHIFT), ByteOrder.BIG_ENDIAN);
    }

    /** The version field of the key at {@code keyOffset}: the policy version, with its limit index on top. */
    public static long version(final DirectBuffer key, final int keyOffset)
    {
        return key.getInt(keyOffset + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF_FFFFL;
    }

    /** The policy version of a key's version field ({@link #version}). */
    public static long policyVersion(final long versionField)
    {
        return versionField & MAX_VERSION;
    }

    /** Which of the policy's limits a key's version field ({@link #version}) is for: 0 its own, k its extra limit k - 1. */
    public static int limitIndex(final long versionField)
    {
        return (int)((versionField & ~LEASE_BIT) >>> LIMIT_INDEX_SHIFT);
    }

    /** Whether a key's version field ({@link #version}) is a lease record's. */
    public static boolean isLease(final long versionField)
    {
        return (versionField & LEASE_BIT) != 0;
    }

    /**
     * Writes the key of a lease's record at {@code at}: the prefix of the limit's key {@code limitKey}
     * (at {@code limitOffset}) with {@link #LEASE_BIT}, {@code limitHash} and {@code leaseId}.
     *
     * @return {@link #LEASE_KEY_LENGTH}
     */
    public static int putLeaseKey(final MutableDirectBuffer key, final int at, final DirectBuffer limitKey, final int limitOffset,
        final long limitHash, final long leaseId)
    {
        key.putShort(at, limitKey.getShort(limitOffset, ByteOrder.BIG_ENDIAN), ByteOrder.BIG_ENDIAN);
        key.putInt(at + 2, (int)(version(limitKey, limitOffset) | LEASE_BIT), ByteOrder.BIG_ENDIAN);
        key.putLong(at + PREFIX_LENGTH, limitHash, ByteOrder.BIG_ENDIAN);
        key.putLong(at + PREFIX_LENGTH + 8, leaseId, ByteOrder.BIG_ENDIAN);
        return LEASE_KEY_LENGTH;
    }
}
