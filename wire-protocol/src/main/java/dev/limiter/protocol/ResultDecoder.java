package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * Reusable flyweight over the body of a RESULT or BATCH_RESULT frame. {@link #wrap} checks the
 * structure once; record accessors then read in place without allocating.
 */
public final class ResultDecoder
{
    private ByteBuf buffer;
    private int recordsStart;
    private int count;
    private int dictionaryStart;
    private int dictionaryCount;
    private int leasesStart;
    private int leaseCount;
    private int refusalsStart;
    private int refusalCount;
    /** The frame's decision-id base, 0 when it carries none ({@link DecisionIds}). */
    private long decisionIdBase;

    /**
     * @return {@code null} when the body is well formed, otherwise what is wrong with it
     */
    public String wrap(final ByteBuf buffer, final int bodyOffset, final int bodyEnd)
    {
        this.buffer = buffer;
        if (bodyEnd - bodyOffset < ResultCodec.BATCH_HEADER_LENGTH + 2)
        {
            return "result body too short: " + (bodyEnd - bodyOffset) + " bytes";
        }
        count = buffer.getUnsignedShort(bodyOffset);
        recordsStart = bodyOffset + ResultCodec.BATCH_HEADER_LENGTH;
        dictionaryStart = recordsStart + count * ResultCodec.RECORD_LENGTH;
        if (dictionaryStart + 2 > bodyEnd)
        {
            return "result claims " + count + " records but the body is " + (bodyEnd - bodyOffset) + " bytes";
        }
        dictionaryCount = buffer.getUnsignedShort(dictionaryStart);
        int position = dictionaryStart + 2;
        for (int i = 0; i < dictionaryCount; i++)
        {
            if (position + 3 > bodyEnd)
            {
                return "policy dictionary truncated at entry " + i;
            }
            position += 3 + buffer.getUnsignedByte(position + 2);
        }
        leaseCount = 0;
        refusalCount = 0;
        decisionIdBase = 0;
        if (position != bodyEnd)
        {
            if (position + 2 > bodyEnd)
            {
                return "result body has " + (bodyEnd - position) + " bytes after the policy dictionary";
            }
            leaseCount = buffer.getUnsignedShort(position);
            leasesStart = position + 2;
            if (leasesStart + (long)leaseCount * ResultCodec.LEASE_LENGTH > bodyEnd)
            {
                return "lease section claims " + leaseCount + " leases but has " + (bodyEnd - leasesStart) + " bytes";
            }
            for (int l = 0; l < leaseCount; l++)
            {
                final int record = buffer.getUnsignedShort(leasesStart + l * ResultCodec.LEASE_LENGTH);
                if (record >= count || !holdsLease(record))
                {
                    return "lease section names record " + record + ", which holds no lease";
                }
            }
            position = leasesStart + leaseCount * ResultCodec.LEASE_LENGTH;
            if (position != bodyEnd)
            {
                final String refusals = wrapRefusals(position, bodyEnd);
                if (refusals != null)
                {
                    return refusals;
                }
            }
        }
        return null;
    }

    private String wrapRefusals(final int at, final int bodyEnd)
    {
        if (at + 2 > bodyEnd)
        {
            return "result body has " + (bodyEnd - at) + " bytes after the lease section";
        }
        refusalCount = buffer.getUnsignedShort(at);
        refusalsStart = at + 2;
        int position = refusalsStart;
        for (int r = 0; r < refusalCount; r++)
        {
            if (position + 4 > bodyEnd)
            {
                return "refusal section truncated at refusal " + r;
            }
            final int record = buffer.getUnsignedShort(position);
            if (record >= count || reasonCode(record) != ReasonCode.INVALID_REQUEST.code())
            {
                return "refusal section names record " + record + ", which was not refused";
            }
            position += 4 + buffer.getUnsignedShort(position + 2);
        }
        if (position > bodyEnd)
        {
            return "refusal section claims " + refusalCount + " refusals but the body ends first";
        }
        if (position != bodyEnd)
        {
            final String ids = DecisionIds.sectionProblem(buffer, position, bodyEnd);
            if (ids != null)
            {
                return ids;
            }
            decisionIdBase = DecisionIds.base(buffer, position);
        }
        return null;
    }

    /**
     * The id base of this frame's decisions (record {@code i} is decision {@code (base, i)},
     * {@link DecisionIds#format}); 0 when the frame carries none (the node did not send them).
     */
    public long decisionIdBase()
    {
        return decisionIdBase;
    }

    /** Why record {@code i} (answered {@link ReasonCode#INVALID_REQUEST}) was not decided; null when it says nothing. Allocates. */
    public String refusal(final int i)
    {
        int position = refusalsStart;
        for (int r = 0; r < refusalCount; r++)
        {
            final int length = buffer.getUnsignedShort(position + 2);
            if (buffer.getUnsignedShort(position) == i)
            {
                return buffer.toString(position + 4, length, java.nio.charset.StandardCharsets.UTF_8);
            }
            position += 4 + length;
        }
        return null;
    }

    public int count()
    {
        return count;
    }

    private int record(final int i)
    {
        return recordsStart + i * ResultCodec.RECORD_LENGTH;
    }

    public boolean allowed(final int i)
    {
        return (buffer.getByte(record(i) + ResultCodec.FLAGS_OFFSET) & ResultCodec.ALLOWED_FLAG) != 0;
    }

    /** Whether the node decides record {@code i}'s key at its policy's {@code tokenLease.hotRate} or more. */
    public boolean hotKey(final int i)
    {
        return (buffer.getByte(record(i) + ResultCodec.FLAGS_OFFSET) & ResultCodec.HOT_KEY_FLAG) != 0;
    }

    /** Whether record {@code i} holds a lease, to be given back with a RELEASE naming {@link #leaseId}. */
    public boolean holdsLease(final int i)
    {
        return (buffer.getByte(record(i) + ResultCodec.FLAGS_OFFSET) & ResultCodec.LEASE_FLAG) != 0;
    }

    /** The check of the lease record {@code i} holds (a RELEASE sends it back); 0 when it holds none. */
    public int leaseCheck(final int i)
    {
        for (int l = 0; l < leaseCount; l++)
        {
            final int at = leasesStart + l * ResultCodec.LEASE_LENGTH;
            if (buffer.getUnsignedShort(at) == i)
            {
                return buffer.getInt(at + 10);
            }
        }
        return 0;
    }

    /** The id of the lease record {@code i} holds; 0 when it holds none. */
    public long leaseId(final int i)
    {
        for (int l = 0; l < leaseCount; l++)
        {
            final int at = leasesStart + l * ResultCodec.LEASE_LENGTH;
            if (buffer.getUnsignedShort(at) == i)
            {
                return buffer.getLong(at + 2);
            }
        }
        return 0;
    }

    public int reasonCode(final int i)
    {
        return buffer.getUnsignedByte(record(i) + ResultCodec.REASON_OFFSET);
    }

    public int policyRef(final int i)
    {
        return buffer.getUnsignedShort(record(i) + ResultCodec.POLICY_REF_OFFSET);
    }

    /** Seconds an empty bucket of the deciding policy takes to fill. */
    public long windowSeconds(final int i)
    {
        return buffer.getUnsignedInt(record(i) + ResultCodec.WINDOW_OFFSET);
    }

    public long remaining(final int i)
    {
        return buffer.getLong(record(i) + ResultCodec.REMAINING_OFFSET);
    }

    public long limit(final int i)
    {
        return buffer.getLong(record(i) + ResultCodec.LIMIT_OFFSET);
    }

    public long retryAfterNanos(final int i)
    {
        return buffer.getLong(record(i) + ResultCodec.RETRY_AFTER_OFFSET);
    }

    public long resetAfterNanos(final int i)
    {
        return buffer.getLong(record(i) + ResultCodec.RESET_AFTER_OFFSET);
    }

    public long policyVersion(final int i)
    {
        return buffer.getLong(record(i) + ResultCodec.POLICY_VERSION_OFFSET);
    }

    /** Number of entries in the policy dictionary. */
    public int policyCount()
    {
        return dictionaryCount;
    }

    /**
     * Index of the dictionary entry for {@code ref}, or -1. The id of entry {@code d} is
     * {@link #policyIdLength(int)} bytes at {@link #policyIdOffset(int)}.
     */
    public int findPolicy(final int ref)
    {
        int position = dictionaryStart + 2;
        for (int d = 0; d < dictionaryCount; d++)
        {
            if (buffer.getUnsignedShort(position) == ref)
            {
                return position;
            }
            position += 3 + buffer.getUnsignedByte(position + 2);
        }
        return -1;
    }

    /** Index of the id bytes of the dictionary entry at {@code entryPosition} (from {@link #findPolicy}). */
    public int policyIdOffset(final int entryPosition)
    {
        return entryPosition + 3;
    }

    public int policyIdLength(final int entryPosition)
    {
        return buffer.getUnsignedByte(entryPosition + 2);
    }

    public ByteBuf buffer()
    {
        return buffer;
    }
}
