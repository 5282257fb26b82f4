package dev.limiter.protocol;

import java.nio.ByteBuffer;
import java.util.Base64;

/**
 * A lease as one printable string, so that whoever holds it can give it back without anything
 * else (another process, an operator with {@code ./limiter release --lease}): the lease id and the
 * cost and descriptor fields ({@link AcquireCodec#encodeFields}) of the acquire that took it.
 *
 * <pre>
 * "L1." base64url(i64 lease id | i32 check | i32 cost | encoded descriptor fields)   (no padding)
 * </pre>
 * Immutable. The one owner of this format.
 */
public final class LeaseToken
{
    private static final String PREFIX = "L1.";

    private final long leaseId;
    private final int check;
    private final int cost;
    private final byte[] encodedFields;

    public LeaseToken(final long leaseId, final int check, final int cost, final byte[] encodedFields)
    {
        this.leaseId = leaseId;
        this.check = check;
        this.cost = cost;
        this.encodedFields = encodedFields.clone();
    }

    /** The cluster's id of the lease: 64 random bits, which only its grant's answer told. */
    public long leaseId()
    {
        return leaseId;
    }

    /** Which limits and versions took the lease, as the grant said (a RELEASE sends it back). */
    public int check()
    {
        return check;
    }

    /** Tokens the lease holds (the acquire's cost). */
    public int cost()
    {
        return cost;
    }

    /** The acquire's descriptor fields as {@link AcquireCodec#appendEntry} sends them. */
    public byte[] encodedFields()
    {
        return encodedFields.clone();
    }

    /** The printable form. */
    public String encode()
    {
        final ByteBuffer bytes = ByteBuffer.allocate(16 + encodedFields.length);
        bytes.putLong(leaseId).putInt(check).putInt(cost).put(encodedFields);
        return PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes.array());
    }

    /**
     * Reads a printable lease.
     *
     * @throws IllegalArgumentException saying what is wrong with it
     */
    public static LeaseToken parse(final String text)
    {
        if (text == null || !text.startsWith(PREFIX))
        {
            throw new IllegalArgumentException("not a lease id: it starts with '" + PREFIX + "' (as acquire --lease prints it)");
        }
        final byte[] bytes;
        try
        {
            bytes = Base64.getUrlDecoder().decode(text.substring(PREFIX.length()));
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException("not a lease id: the part after '" + PREFIX + "' is not base64url (" + e.getMessage() + ")");
        }
        if (bytes.length < 16 + AcquireCodec.MIN_ENTRY_LENGTH - 4)
        {
            throw new IllegalArgumentException("not a lease id: " + bytes.length + " bytes, too short to name a descriptor");
        }
        final ByteBuffer in = ByteBuffer.wrap(bytes);
        final long leaseId = in.getLong();
        final int check = in.getInt();
        final int cost = in.getInt();
        if (cost < 1)
        {
            throw new IllegalArgumentException("not a lease id: its cost is " + cost);
        }
        final byte[] fields = new byte[in.remaining()];
        in.get(fields);
        return new LeaseToken(leaseId, check, cost, fields);
    }

    @Override
    public String toString()
    {
        return encode();
    }
}
