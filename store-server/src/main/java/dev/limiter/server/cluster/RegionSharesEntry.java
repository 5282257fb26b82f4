package dev.limiter.server.cluster;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.limiter.protocol.policy.RegionShares;

import java.nio.ByteBuffer;

/**
 * The one owner of the REGION_SHARES log entry of a group other than the control group: its copy
 * of the region's shares of regional policies, as the control group had them at a generation
 * (docs/regions.md, several Raft groups). The group's shards decide with no more than the copy
 * says, whatever their node has applied of the control group, so the copy binds every leader the
 * group will have; a copy older than the one applied changes nothing.
 *
 * <pre>
 * u8 5 | RegionShares (protobuf: share_ppm and generation)
 * </pre>
 */
public final class RegionSharesEntry
{
    /** First byte of the entry. */
    public static final byte TYPE = 5;

    private RegionSharesEntry()
    {
    }

    /** The entry's bytes (position 0, limit its length). */
    public static ByteBuffer encode(final RegionShares shares)
    {
        final byte[] body = shares.toByteArray();
        return ByteBuffer.allocate(1 + body.length).put(TYPE).put(body).flip();
    }

    /**
     * Reads the copy from {@code entry}'s position (not moved).
     *
     * @throws IllegalArgumentException when it is not a REGION_SHARES entry or its body does not parse
     */
    public static RegionShares decode(final ByteBuffer entry)
    {
        if (!entry.hasRemaining() || entry.get(entry.position()) != TYPE)
        {
            throw new IllegalArgumentException("not a REGION_SHARES entry");
        }
        try
        {
            return RegionShares.parseFrom(entry.duplicate().position(entry.position() + 1));
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalArgumentException("REGION_SHARES entry holds no valid RegionShares: " + e.getMessage(), e);
        }
    }
}
