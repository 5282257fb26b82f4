package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * Body of ACQUIRE and BATCH_ACQUIRE frames (ACQUIRE is a batch whose count is 1).
 *
 * <pre>
 * u16 count | u16 reserved (0) | count x entry
 * entry: i32 cost | u8 len, tenant | u8 len, principal | u8 flag and len, method | u16 len, route
 *        | u8 len, clientIp | u8 len, region          (strings are UTF-8)
 * </pre>
 * A cost of 0 asks for a check: whether one token is there, charging nothing. The method's length
 * byte carries {@link #ENVOY_FLAG}: an entry that is a descriptor of Envoy's rate limit service
 * ({@link EnvoyDescriptors}), which only policies with an envoy selector decide. Only the Envoy
 * gateway writes it ({@link #encodeEnvoyFields}): no value of any field can make an entry one.
 */
public final class AcquireCodec
{
    /** Most entries one batch frame may carry. */
    public static final int MAX_BATCH = 4096;
    public static final int BATCH_HEADER_LENGTH = 4;
    /** Smallest encoded entry: cost plus six empty length prefixes. */
    public static final int MIN_ENTRY_LENGTH = 4 + 5 + 2;

    private AcquireCodec()
    {
    }

    /** Bit of the method's length byte that marks an Envoy descriptor (the method's length is the low 7 bits). */
    public static final int ENVOY_FLAG = 0x80;

    /**
     * Encodes the fields of an Envoy descriptor: {@code tenant} and {@code route} as
     * {@link EnvoyDescriptors} builds them, no method, and {@link #ENVOY_FLAG}.
     */
    public static byte[] encodeEnvoyFields(final String tenant, final String route)
    {
        final byte[] fields = encodeFields(tenant, "", "", route, "", "");
        fields[methodLengthAt(fields)] |= (byte)ENVOY_FLAG;
        return fields;
    }

    /** Whether encoded fields ({@link #encodeFields}, {@link #encodeEnvoyFields}) are an Envoy descriptor's. */
    public static boolean isEnvoy(final byte[] encodedFields)
    {
        return (encodedFields[methodLengthAt(encodedFields)] & ENVOY_FLAG) != 0;
    }

    /** Index of the method's length byte in encoded fields: after the tenant and the principal. */
    private static int methodLengthAt(final byte[] encodedFields)
    {
        final int principalAt = 1 + (encodedFields[0] & 0xFF);
        return principalAt + 1 + (encodedFields[principalAt] & 0xFF);
    }

    /**
     * Encodes the descriptor fields of one entry (everything after the cost) exactly as given:
     * callers normalise first. Done once per descriptor, so sending it is a byte copy.
     *
     * @throws IllegalArgumentException if a field is longer than the wire format can carry
     */
    public static byte[] encodeFields(
        final String tenant,
        final String principal,
        final String method,
        final String route,
        final String clientIp,
        final String region)
    {
        final byte[][] parts = {
            utf8(tenant), utf8(principal), utf8(method), utf8(route), utf8(clientIp), utf8(region) };
        int length = 0;
        for (int i = 0; i < parts.length; i++)
        {
            final DescriptorField field = DescriptorField.at(i);
            if (parts[i].length > field.maxWireBytes())
            {
                throw new IllegalArgumentException(field.jsonName() + " is too long for the wire (" +
                    parts[i].length + " bytes; at most " + field.maxWireBytes() + ")");
            }
            length += (field == DescriptorField.ROUTE ? 2 : 1) + parts[i].length;
        }
        final byte[] out = new byte[length];
        int pos = 0;
        for (int i = 0; i < parts.length; i++)
        {
            final byte[] part = parts[i];
            if (DescriptorField.at(i) == DescriptorField.ROUTE)
            {
                out[pos++] = (byte)(part.length >>> 8);
            }
            out[pos++] = (byte)part.length;
            System.arraycopy(part, 0, out, pos, part.length);
            pos += part.length;
        }
        return out;
    }

    private static byte[] utf8(final String s)
    {
        return s == null ? new byte[0] : s.getBytes(StandardCharsets.UTF_8);
    }

    /** Starts a batch frame; returns the frame start index for {@link #finishBatch}. */
    public static int beginBatch(final ByteBuf out, final int type, final long correlationId)
    {
        final int start = Frame.begin(out, type, correlationId);
        out.writeShort(0);
        out.writeShort(0);
        return start;
    }

    /** Appends one entry: the cost and a descriptor's pre-encoded fields. */
    public static void appendEntry(final ByteBuf out, final int cost, final byte[] encodedFields)
    {
        out.writeInt(cost);
        out.writeBytes(encodedFields);
    }

    /** Writes the entry count and the frame length. */
    public static void finishBatch(final ByteBuf out, final int frameStart, final int count)
    {
        out.setShort(frameStart + Frame.HEADER_LENGTH, count);
        Frame.finish(out, frameStart);
    }
}
