package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * A reusable flyweight over the body of an ACQUIRE or BATCH_ACQUIRE frame. It validates the
 * structure and every field in place (see {@link DescriptorRules}) and exposes trimmed field
 * ranges; nothing is copied or allocated on the success path.
 *
 * <pre>{@code
 * if (decoder.wrap(frame, bodyStart, frameEnd) != null) -> malformed
 * while (decoder.next()) { use decoder.cost(), decoder.offset(TENANT), ... }
 * if (decoder.failed()) -> decoder.errorCode(), decoder.errorMessage()
 * }</pre>
 */
public final class AcquireDecoder implements DescriptorView
{
    private static final int FIELD_COUNT = DescriptorField.values().length;

    private final int[] offsets = new int[FIELD_COUNT];
    private final int[] lengths = new int[FIELD_COUNT];
    private ByteBuf buffer;
    private int position;
    private int end;
    private int count;
    private int index;
    private int cost;
    private boolean envoy;

    private ErrorCode errorCode;
    private int errorEntry;
    private DescriptorField errorField;
    private FieldProblem errorProblem;
    private int errorLength;

    /**
     * Wraps a body and reads its header.
     *
     * @return {@code null} when the header is sound, otherwise a message for a MALFORMED_FRAME
     * or BATCH_TOO_LARGE error (see {@link #errorCode()})
     */
    public String wrap(final ByteBuf buffer, final int bodyOffset, final int bodyEnd, final boolean single)
    {
        this.buffer = buffer;
        this.end = bodyEnd;
        this.index = 0;
        this.errorCode = null;
        this.errorField = null;
        if (bodyEnd - bodyOffset < AcquireCodec.BATCH_HEADER_LENGTH)
        {
            errorCode = ErrorCode.MALFORMED_FRAME;
            return "acquire body is " + (bodyEnd - bodyOffset) + " bytes; the batch header alone is " +
                AcquireCodec.BATCH_HEADER_LENGTH;
        }
        count = buffer.getUnsignedShort(bodyOffset);
        position = bodyOffset + AcquireCodec.BATCH_HEADER_LENGTH;
        if (count == 0 || (single && count != 1))
        {
            errorCode = ErrorCode.MALFORMED_FRAME;
            return single ? "ACQUIRE and RELEASE carry exactly 1 entry, found " + count : "BATCH_ACQUIRE carries no entries";
        }
        if (count > AcquireCodec.MAX_BATCH)
        {
            errorCode = ErrorCode.BATCH_TOO_LARGE;
            return "batch of " + count + " entries; at most " + AcquireCodec.MAX_BATCH;
        }
        if ((long)count * AcquireCodec.MIN_ENTRY_LENGTH > bodyEnd - position)
        {
            errorCode = ErrorCode.MALFORMED_FRAME;
            return "batch claims " + count + " entries but the body has room for fewer";
        }
        return null;
    }

    /** Number of entries in the wrapped body. */
    public int count()
    {
        return count;
    }

    /** Index of the entry {@link #next()} last decoded. */
    public int index()
    {
        return index - 1;
    }

    /**
     * Decodes and validates the next entry.
     *
     * @return true if an entry is ready; false at the end of the body or on error ({@link #failed()})
     */
    public boolean next()
    {
        if (index >= count || errorCode != null)
        {
            if (errorCode == null && position != end)
            {
                fail(ErrorCode.MALFORMED_FRAME, null, null, end - position);
            }
            return false;
        }
        if (end - position < AcquireCodec.MIN_ENTRY_LENGTH)
        {
            return fail(ErrorCode.MALFORMED_FRAME, null, null, 0);
        }
        cost = buffer.getInt(position);
        position += 4;
        envoy = false;
        for (int f = 0; f < FIELD_COUNT; f++)
        {
            final DescriptorField field = DescriptorField.at(f);
            final int prefix = field == DescriptorField.ROUTE ? 2 : 1;
            if (end - position < prefix)
            {
                return fail(ErrorCode.MALFORMED_FRAME, null, null, 0);
            }
            int rawLength = prefix == 2 ? buffer.getUnsignedShort(position) : buffer.getUnsignedByte(position);
            if (field == DescriptorField.METHOD && (rawLength & AcquireCodec.ENVOY_FLAG) != 0)
            {
                envoy = true;
                rawLength &= ~AcquireCodec.ENVOY_FLAG;
            }
            position += prefix;
            if (rawLength > end - position)
            {
                return fail(ErrorCode.MALFORMED_FRAME, null, null, 0);
            }
            if (rawLength > field.maxWireBytes())
            {
                return fail(ErrorCode.INVALID_DESCRIPTOR, field, FieldProblem.TOO_LONG, rawLength);
            }
            final int start = DescriptorRules.trimStart(buffer, position, rawLength);
            final int stop = DescriptorRules.trimEnd(buffer, start, position + rawLength);
            final FieldProblem problem = DescriptorRules.check(field, buffer, start, stop - start);
            if (problem != FieldProblem.NONE)
            {
                return fail(ErrorCode.INVALID_DESCRIPTOR, field, problem, stop - start);
            }
            offsets[f] = start;
            lengths[f] = field == DescriptorField.ROUTE ?
                DescriptorRules.routePathLength(buffer, start, stop - start) : stop - start;
            position += rawLength;
        }
        index++;
        if (cost < 0)
        {
            index--;
            return fail(ErrorCode.INVALID_COST, null, null, cost);
        }
        return true;
    }

    private boolean fail(final ErrorCode code, final DescriptorField field, final FieldProblem problem, final int length)
    {
        errorCode = code;
        errorEntry = index;
        errorField = field;
        errorProblem = problem;
        errorLength = length;
        return false;
    }

    /** True once {@link #next()} stopped on an error rather than at the end. */
    public boolean failed()
    {
        return errorCode != null;
    }

    public ErrorCode errorCode()
    {
        return errorCode;
    }

    /** A one-line description of the error, naming the entry and field (allocates; error path only). */
    public String errorMessage()
    {
        if (errorCode == null)
        {
            return null;
        }
        switch (errorCode)
        {
            case INVALID_DESCRIPTOR:
                return "entry " + errorEntry + ": " + errorProblem.describe(errorField, errorLength);
            case INVALID_COST:
                return "entry " + errorEntry + ": cost must be a positive integer (or 0 to check without charging), was " + errorLength;
            default:
                return errorLength > 0 ?
                    errorLength + " unexpected bytes after the last entry" :
                    "entry " + errorEntry + " is truncated or its lengths overrun the frame";
        }
    }

    /** Cost of the current entry: tokens asked for, or 0 for a check (is a token there? nothing charged). */
    public int cost()
    {
        return cost;
    }

    /** Whether the current entry is a descriptor of Envoy's rate limit service ({@link AcquireCodec#ENVOY_FLAG}). */
    @Override
    public boolean envoy()
    {
        return envoy;
    }

    /** Buffer the current entry's fields live in. */
    @Override
    public ByteBuf buffer()
    {
        return buffer;
    }

    /** Start index of the trimmed value of {@code field} in {@link #buffer()}. */
    @Override
    public int offset(final DescriptorField field)
    {
        return offsets[field.ordinal()];
    }

    /** Length of the trimmed value (for ROUTE: of the path, without query or fragment). */
    @Override
    public int length(final DescriptorField field)
    {
        return lengths[field.ordinal()];
    }
}
