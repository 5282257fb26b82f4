package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

import java.util.Arrays;

/**
 * Parses IPv4 and IPv6 literals from bytes into their 16-byte form (IPv4 as IPv4-mapped IPv6), so
 * that every spelling of one address ({@code ::1}, {@code 0:0:0:0:0:0:0:1}, {@code 1.2.3.4},
 * {@code ::ffff:1.2.3.4}) gives one key. Allocation free.
 */
public final class IpAddresses
{
    /** Bytes of the canonical form. */
    public static final int LENGTH = 16;

    private IpAddresses()
    {
    }

    /**
     * Parses {@code [offset, offset+length)} into {@code out[outOffset..outOffset+16)}.
     *
     * @return true if the bytes are an IPv4 or IPv6 literal (no zone, no brackets, no prefix)
     */
    public static boolean parse(final ByteBuf buf, final int offset, final int length, final byte[] out, final int outOffset)
    {
        if (length == 0)
        {
            return false;
        }
        boolean hasColon = false;
        for (int i = 0; i < length; i++)
        {
            if (buf.getByte(offset + i) == ':')
            {
                hasColon = true;
                break;
            }
        }
        if (!hasColon)
        {
            for (int i = 0; i < 10; i++)
            {
                out[outOffset + i] = 0;
            }
            out[outOffset + 10] = (byte)0xFF;
            out[outOffset + 11] = (byte)0xFF;
            return parseIpv4(buf, offset, length, out, outOffset + 12);
        }
        return parseIpv6(buf, offset, length, out, outOffset);
    }

    private static boolean parseIpv4(final ByteBuf buf, final int offset, final int length, final byte[] out, final int at)
    {
        int part = 0;
        int value = -1;
        int digits = 0;
        for (int i = 0; i <= length; i++)
        {
            final int c = i == length ? '.' : buf.getByte(offset + i);
            if (c == '.')
            {
                if (value < 0 || part > 3)
                {
                    return false;
                }
                out[at + part++] = (byte)value;
                value = -1;
                digits = 0;
            }
            else if (c >= '0' && c <= '9')
            {
                if (digits > 0 && value == 0)
                {
                    return false; // no leading zeros: "01" is ambiguous (octal in some parsers)
                }
                value = (value < 0 ? 0 : value * 10) + (c - '0');
                if (value > 255 || ++digits > 3)
                {
                    return false;
                }
            }
            else
            {
                return false;
            }
        }
        return part == 4;
    }

    private static boolean parseIpv6(final ByteBuf buf, final int offset, final int length, final byte[] out, final int at)
    {
        final int end = offset + length;
        int group = 0;       // 16-bit groups written so far
        int gap = -1;        // group index where "::" stands
        int i = offset;
        if (length >= 2 && buf.getByte(i) == ':' && buf.getByte(i + 1) == ':')
        {
            gap = 0;
            i += 2;
            if (i == end)
            {
                Arrays.fill(out, at, at + LENGTH, (byte)0);
                return true;
            }
        }
        else if (buf.getByte(i) == ':')
        {
            return false;
        }
        while (i < end)
        {
            if (group == 8)
            {
                return false;
            }
            // An embedded IPv4 tail, as in ::ffff:1.2.3.4, takes the last two groups.
            int dot = -1;
            int stop = i;
            while (stop < end && buf.getByte(stop) != ':')
            {
                if (buf.getByte(stop) == '.')
                {
                    dot = stop;
                }
                stop++;
            }
            if (dot >= 0)
            {
                if (stop != end || group > 6 || !parseIpv4(buf, i, stop - i, out, at + group * 2))
                {
                    return false;
                }
                group += 2;
                i = end;
                break;
            }
            final int digits = stop - i;
            if (digits < 1 || digits > 4)
            {
                return false;
            }
            int value = 0;
            for (int k = i; k < stop; k++)
            {
                final int h = hex(buf.getByte(k));
                if (h < 0)
                {
                    return false;
                }
                value = value << 4 | h;
            }
            out[at + group * 2] = (byte)(value >>> 8);
            out[at + group * 2 + 1] = (byte)value;
            group++;
            i = stop;
            if (i < end)
            {
                i++; // the ':'
                if (i < end && buf.getByte(i) == ':')
                {
                    if (gap >= 0)
                    {
                        return false; // a second "::"
                    }
                    gap = group;
                    i++;
                }
                else if (i == end)
                {
                    return false; // trailing single ':'
                }
            }
        }
        if (gap < 0)
        {
            return group == 8;
        }
        if (group == 8)
        {
            return false; // "::" must stand for at least one group
        }
        // Move the groups after the gap to the end and zero the middle.
        final int tail = group - gap;
        System.arraycopy(out, at + gap * 2, out, at + LENGTH - tail * 2, tail * 2);
        Arrays.fill(out, at + gap * 2, at + LENGTH - tail * 2, (byte)0);
        return true;
    }

    private static int hex(final byte c)
    {
        if (c >= '0' && c <= '9')
        {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f')
        {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F')
        {
            return c - 'A' + 10;
        }
        return -1;
    }
}
