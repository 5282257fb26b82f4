package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * Strict UTF-8 of one code point at a time: shortest forms only, no surrogates, nothing above
 * U+10FFFF. Shared by the field rules ({@link DescriptorRules}) and the escaping of Envoy's values
 * ({@link EnvoyDescriptors}), so both agree on what is valid.
 */
final class Utf8
{
    private Utf8()
    {
    }

    /**
     * The length (2 to 4) of the valid sequence of a non-ASCII code point that starts at {@code i}
     * and ends by {@code end}, or -1 when the bytes there are not one.
     */
    static int sequenceLength(final ByteBuf buf, final int i, final int end)
    {
        final int b0 = buf.getByte(i) & 0xFF;
        final int extra;
        int codePoint;
        if (b0 >= 0xC2 && b0 <= 0xDF)
        {
            extra = 1;
            codePoint = b0 & 0x1F;
        }
        else if (b0 >= 0xE0 && b0 <= 0xEF)
        {
            extra = 2;
            codePoint = b0 & 0x0F;
        }
        else if (b0 >= 0xF0 && b0 <= 0xF4)
        {
            extra = 3;
            codePoint = b0 & 0x07;
        }
        else
        {
            return -1;
        }
        if (i + extra >= end)
        {
            return -1; // truncated
        }
        for (int k = 1; k <= extra; k++)
        {
            final int b = buf.getByte(i + k) & 0xFF;
            if ((b & 0xC0) != 0x80)
            {
                return -1;
            }
            codePoint = (codePoint << 6) | (b & 0x3F);
        }
        if ((extra == 2 && (codePoint < 0x800 || (codePoint >= 0xD800 && codePoint <= 0xDFFF))) ||
            (extra == 3 && (codePoint < 0x10000 || codePoint > 0x10FFFF)))
        {
            return -1;
        }
        return extra + 1;
    }

    /** Whether the valid two-byte sequence at {@code i} ({@link #sequenceLength} 2) is a C1 control character (U+0080-U+009F). */
    static boolean isC1Control(final ByteBuf buf, final int i, final int length)
    {
        return length == 2 && (buf.getByte(i) & 0xFF) == 0xC2 && (buf.getByte(i + 1) & 0xFF) <= 0x9F;
    }
}
