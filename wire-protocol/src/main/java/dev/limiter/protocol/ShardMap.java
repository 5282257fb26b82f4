package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Which node leads each shard, as a node sees it now, and the rule that puts a tenant on a shard:
 * what a client needs to send each entry straight to the leader of its shard. The one owner of
 * the {@link MessageType#SHARD_MAP_RESULT} body:
 *
 * <pre>
 * u16 shards | u16 groups | shards x u16 group | groups x (u16 length | leader's data address, UTF-8 host:port, empty when none)
 * </pre>
 * Shard {@code s} belongs to Raft group {@code s mod groups}; the map says so explicitly so that a
 * client needs no rule of its own for it. Immutable.
 */
public final class ShardMap
{
    /** Most shards a node runs. */
    public static final int MAX_SHARDS = 64;

    private static final long P1 = 0x9E3779B97F4A7C15L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;

    private final int[] groupOfShard;
    private final String[] leaderOfGroup;

    /**
     * @param groupOfShard  the Raft group of each shard
     * @param leaderOfGroup each group's leader ({@code host:port} of its data port), "" when none is known
     */
    public ShardMap(final int[] groupOfShard, final String[] leaderOfGroup)
    {
        if (groupOfShard.length < 1 || groupOfShard.length > MAX_SHARDS || leaderOfGroup.length < 1 ||
            leaderOfGroup.length > groupOfShard.length)
        {
            throw new IllegalArgumentException("a shard map has 1 to " + MAX_SHARDS + " shards and 1 to that many groups, was " +
                groupOfShard.length + " shards, " + leaderOfGroup.length + " groups");
        }
        for (final int group : groupOfShard)
        {
            if (group < 0 || group >= leaderOfGroup.length)
            {
                throw new IllegalArgumentException("a shard names group " + group + " of " + leaderOfGroup.length);
            }
        }
        this.groupOfShard = groupOfShard.clone();
        this.leaderOfGroup = leaderOfGroup.clone();
    }

    public int shards()
    {
        return groupOfShard.length;
    }

    public int groups()
    {
        return leaderOfGroup.length;
    }

    /** The data address of the leader of {@code shard}'s group, or "" when none is known. */
    public String leaderOf(final int shard)
    {
        return leaderOfGroup[groupOfShard[shard]];
    }

    /** Writes the body. */
    public void encode(final ByteBuf out)
    {
        out.writeShort(groupOfShard.length);
        out.writeShort(leaderOfGroup.length);
        for (final int group : groupOfShard)
        {
            out.writeShort(group);
        }
        for (final String leader : leaderOfGroup)
        {
            final byte[] bytes = leader.getBytes(StandardCharsets.UTF_8);
            out.writeShort(bytes.length);
            out.writeBytes(bytes);
        }
    }

    /**
     * Reads a body at {@code [offset, end)} of {@code in}.
     *
     * @throws IllegalArgumentException naming what is wrong with it
     */
    public static ShardMap decode(final ByteBuf in, final int offset, final int end)
    {
        int at = offset;
        if (end - at < 4)
        {
            throw new IllegalArgumentException("a shard map is at least 4 bytes, was " + (end - at));
        }
        final int shards = in.getUnsignedShort(at);
        final int groups = in.getUnsignedShort(at + 2);
        at += 4;
        if (end - at < 2L * shards)
        {
            throw new IllegalArgumentException("a shard map of " + shards + " shards is cut short");
        }
        final int[] groupOfShard = new int[shards];
        for (int s = 0; s < shards; s++, at += 2)
        {
            groupOfShard[s] = in.getUnsignedShort(at);
        }
        final String[] leaders = new String[groups];
        for (int g = 0; g < groups; g++)
        {
            if (end - at < 2 || end - at - 2 < in.getUnsignedShort(at))
            {
                throw new IllegalArgumentException("a shard map's leader of group " + g + " is cut short");
            }
            final int length = in.getUnsignedShort(at);
            leaders[g] = in.toString(at + 2, length, StandardCharsets.UTF_8);
            at += 2 + length;
        }
        return new ShardMap(groupOfShard, leaders);
    }

    /**
     * The hash a node gives a tenant's bytes, the same as its bucket-key hash of them (eight bytes
     * at a time with a multiply-rotate step and the murmur3 finaliser), never 0.
     */
    public static long tenantHash(final byte[] tenant)
    {
        final int length = tenant.length;
        long h = P2 ^ (length * P1);
        int i = 0;
        for (; i + 8 <= length; i += 8)
        {
            long word = 0;
            for (int b = 7; b >= 0; b--)
            {
                word = word << 8 | (tenant[i + b] & 0xFFL); // little-endian, as the node reads it
            }
            h = Long.rotateLeft(h ^ (word * P1), 31) * P2;
        }
        long tail = 0;
        for (int shift = 0; i < length; i++, shift += 8)
        {
            tail |= (tenant[i] & 0xFFL) << shift;
        }
        h = Long.rotateLeft(h ^ (tail * P1), 31) * P2;
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        h *= 0xC4CEB9FE1A85EC53L;
        h ^= h >>> 33;
        return h == 0 ? 1 : h;
    }

    /**
     * The shard that holds the tenant- and principal-scoped buckets of the tenant with this
     * {@link #tenantHash}, among {@code shards}: the rule the node applies to every entry.
     */
    public static int shardOf(final long tenantHash, final int shards)
    {
        return (int)Long.remainderUnsigned(tenantHash >>> 32, shards);
    }

    @Override
    public String toString()
    {
        return "ShardMap{groupOfShard=" + Arrays.toString(groupOfShard) + ", leaderOfGroup=" + Arrays.toString(leaderOfGroup) + '}';
    }
}
