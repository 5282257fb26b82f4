package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Which node leads each shard, as a node sees it now, and the rule that puts a tenant on a shard:
 * what a client needs to send each entry straight to the leader of its shard. The one owner of
 * the {@link MessageType#SHARD_MAP_RESULT} body:
 *
 * <pre>
 * u16 shards | u16 groups | shards x u16 group | groups x (u16 length | leader's data address, UTF-8 host:port, empty when none)
 * | u64 policy set version | u16 policies | policies x (u16 ordinal | u16 length | policy id, UTF-8)
 * </pre>
 * Shard {@code s} belongs to Raft group {@code s mod groups}; the map says so explicitly so that a
 * client needs no rule of its own for it. The node's ordinal of every enforced policy of the set
 * in force lets a client build the bucket key of a GLOBAL or CLIENT_IP policy (which starts with
 * the ordinal, see the node's bucket keys) and so find its shard. Immutable.
 */
public final class ShardMap
{
    /** Most shards a node runs. */
    public static final int MAX_SHARDS = 64;

    private static final long P1 = 0x9E3779B97F4A7C15L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;

    private final int[] groupOfShard;
    private final String[] leaderOfGroup;
    private final long policySetVersion;
    private final Map<String, Integer> ordinals;

    /**
     * @param groupOfShard  the Raft group of each shard
     * @param leaderOfGroup each group's leader ({@code host:port} of its data port), "" when none is known
     */
    public ShardMap(final int[] groupOfShard, final String[] leaderOfGroup)
    {
        this(groupOfShard, leaderOfGroup, 0, Map.of());
    }

    /**
     * @param policySetVersion the version of the policy set {@code ordinals} belong to (0: none)
     * @param ordinals         the node's ordinal of each enforced policy in force, by policy id
     */
    public ShardMap(final int[] groupOfShard, final String[] leaderOfGroup, final long policySetVersion, final Map<String, Integer> ordinals)
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
        this.policySetVersion = policySetVersion;
        this.ordinals = Map.copyOf(ordinals);
    }

    /** The version of the policy set whose ordinals this map carries (0: none). */
    public long policySetVersion()
    {
        return policySetVersion;
    }

    /** The node's ordinal of each enforced policy of that set, by policy id. */
    public Map<String, Integer> ordinals()
    {
        return ordinals;
    }

    public int shards()
    {
        return groupOfShard.length;
    }

    public int groups()
    {
        return leaderOfGroup.length;
    }

    /** The Raft group (0 to {@link #groups()} - 1) that holds {@code shard}. */
    public int groupOf(final int shard)
    {
        return groupOfShard[shard];
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
            writeText(out, leader);
        }
        out.writeLong(policySetVersion);
        out.writeShort(ordinals.size());
        for (final Map.Entry<String, Integer> policy : new TreeMap<>(ordinals).entrySet())
        {
            out.writeShort(policy.getValue());
            writeText(out, policy.getKey());
        }
    }

    private static void writeText(final ByteBuf out, final String text)
    {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        out.writeShort(bytes.length);
        out.writeBytes(bytes);
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
        if (at == end)
        {
            return new ShardMap(groupOfShard, leaders); // a node that sends no ordinals
        }
        if (end - at < 10)
        {
            throw new IllegalArgumentException("a shard map's policy ordinals are cut short");
        }
        final long setVersion = in.getLong(at);
        final int policies = in.getUnsignedShort(at + 8);
        at += 10;
        final Map<String, Integer> ordinals = new HashMap<>();
        for (int i = 0; i < policies; i++)
        {
            if (end - at < 4 || end - at - 4 < in.getUnsignedShort(at + 2))
            {
                throw new IllegalArgumentException("a shard map's policy " + i + " is cut short");
            }
            final int length = in.getUnsignedShort(at + 2);
            ordinals.put(in.toString(at + 4, length, StandardCharsets.UTF_8), in.getUnsignedShort(at));
            at += 4 + length;
        }
        return new ShardMap(groupOfShard, leaders, setVersion, ordinals);
    }

    /**
     * The hash a node gives a tenant's bytes, the same as its bucket-key hash of them (eight bytes
     * at a time with a multiply-rotate step and the murmur3 finaliser), never 0 (a 0 becomes 1, as
     * on the node).
     */
    public static long tenantHash(final byte[] tenant)
    {
        final long h = keyHash(tenant, tenant.length);
        return h == 0 ? 1 : h;
    }

    /** The node's hash of a bucket key's first {@code length} bytes (what places a GLOBAL or CLIENT_IP bucket). */
    public static long keyHash(final byte[] key, final int length)
    {
        long h = P2 ^ (length * P1);
        int i = 0;
        for (; i + 8 <= length; i += 8)
        {
            long word = 0;
            for (int b = 7; b >= 0; b--)
            {
                word = word << 8 | (key[i + b] & 0xFFL); // little-endian, as the node reads it
            }
            h = Long.rotateLeft(h ^ (word * P1), 31) * P2;
        }
        long tail = 0;
        for (int shift = 0; i < length; i++, shift += 8)
        {
            tail |= (key[i] & 0xFFL) << shift;
        }
        h = Long.rotateLeft(h ^ (tail * P1), 31) * P2;
        return mix(h);
    }

    /** The murmur3 64-bit finaliser (fmix64), which ends the node's key hash and this one alike. */
    public static long mix(final long value)
    {
        long h = value;
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        h *= 0xC4CEB9FE1A85EC53L;
        h ^= h >>> 33;
        return h;
    }

    /** Bytes a bucket key starts with on the node: {@code u16 policy ordinal | u32 policy version}, big-endian. */
    public static final int KEY_PREFIX_LENGTH = 6;

    /**
     * The shard of a GLOBAL policy's one bucket ({@code key} is scratch of at least
     * {@link #KEY_PREFIX_LENGTH} bytes), or of a CLIENT_IP policy's bucket for an address when
     * {@code key} already holds its 16-byte form after the prefix and {@code keyLength} counts it.
     */
    public static int keyShard(final byte[] key, final int keyLength, final int ordinal, final long version, final int shards)
    {
        key[0] = (byte)(ordinal >>> 8);
        key[1] = (byte)ordinal;
        key[2] = (byte)(version >>> 24);
        key[3] = (byte)(version >>> 16);
        key[4] = (byte)(version >>> 8);
        key[5] = (byte)version;
        return shardOf(keyHash(key, keyLength), shards);
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
        return "ShardMap{groupOfShard=" + Arrays.toString(groupOfShard) + ", leaderOfGroup=" + Arrays.toString(leaderOfGroup) +
            ", policySetVersion=" + policySetVersion + ", ordinals=" + ordinals + '}';
    }
}
