package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * Canonical key normalisation, shared by the SDK and the server so that both derive the same key
 * from the same request. Every check works on bytes in place and allocates nothing.
 *
 * <ul>
 *   <li>Every field: ASCII whitespace around the value is trimmed; the value must be valid UTF-8
 *   with no control characters (C0, DEL, C1); then its length limit applies.</li>
 *   <li>tenant and route are required.</li>
 *   <li>method: an HTTP token ({@code A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~}); compared and
 *   keyed case-insensitively (canonical form: upper case).</li>
 *   <li>route: must start with '/'; the query string and fragment are dropped; empty segments
 *   ({@code //}, a trailing '/') are ignored; '.' and '..' segments and spaces are rejected.</li>
 *   <li>clientIp: an IPv4 or IPv6 literal; keyed by its 16-byte value, so every spelling of one
 *   address is one key (see {@link IpAddresses}).</li>
 *   <li>region: {@code A-Z a-z 0-9 - _}; canonical form lower case.</li>
 * </ul>
 */
public final class DescriptorRules
{
    /** Validation only needs to know whether an address parses; the bytes go nowhere. */
    private static final ThreadLocal<byte[]> IP_SCRATCH = ThreadLocal.withInitial(() -> new byte[IpAddresses.LENGTH]);

    private DescriptorRules()
    {
    }

    /** ASCII-whitespace trim of a string, the same rule as {@link #trimStart}/{@link #trimEnd}. */
    public static String trim(final String value)
    {
        int start = 0;
        int end = value.length();
        while (start < end && isAsciiSpace((byte)value.charAt(start)) && value.charAt(start) < 0x80)
        {
            start++;
        }
        while (end > start && isAsciiSpace((byte)value.charAt(end - 1)) && value.charAt(end - 1) < 0x80)
        {
            end--;
        }
        return value.substring(start, end);
    }

    /** Index of the first byte after leading ASCII whitespace in {@code [offset, offset+length)}. */
    public static int trimStart(final ByteBuf buf, final int offset, final int length)
    {
        int i = offset;
        final int end = offset + length;
        while (i < end && isAsciiSpace(buf.getByte(i)))
        {
            i++;
        }
        return i;
    }

    /** Index one past the last byte before trailing ASCII whitespace, given a trimmed start. */
    public static int trimEnd(final ByteBuf buf, final int start, final int end)
    {
        int i = end;
        while (i > start && isAsciiSpace(buf.getByte(i - 1)))
        {
            i--;
        }
        return i;
    }

    /**
     * Checks an already trimmed value of {@code field}.
     *
     * @return {@link FieldProblem#NONE} when valid
     */
    public static FieldProblem check(final DescriptorField field, final ByteBuf buf, final int offset, final int length)
    {
        if (length == 0)
        {
            return field.required() ? FieldProblem.MISSING : FieldProblem.NONE;
        }
        final FieldProblem text = checkUtf8NoControl(buf, offset, length);
        if (text != FieldProblem.NONE)
        {
            return text;
        }
        switch (field)
        {
            case METHOD:
            case REGION:
                return length > field.maxBytes() ? FieldProblem.TOO_LONG : checkChars(buf, offset, length, field);
            case CLIENT_IP:
                if (length > field.maxBytes())
                {
                    return FieldProblem.TOO_LONG;
                }
                return IpAddresses.parse(buf, offset, length, IP_SCRATCH.get(), 0) ? FieldProblem.NONE : FieldProblem.NOT_AN_IP;
            case ROUTE:
                return checkRoute(buf, offset, length);
            default:
                return length > field.maxBytes() ? FieldProblem.TOO_LONG : FieldProblem.NONE;
        }
    }

    /** Length of the path part of a route: everything before the first '?' or '#'. */
    public static int routePathLength(final ByteBuf buf, final int offset, final int length)
    {
        for (int i = 0; i < length; i++)
        {
            final byte b = buf.getByte(offset + i);
            if (b == '?' || b == '#')
            {
                return i;
            }
        }
        return length;
    }

    private static FieldProblem checkRoute(final ByteBuf buf, final int offset, final int length)
    {
        if (buf.getByte(offset) != '/')
        {
            return FieldProblem.NOT_ABSOLUTE;
        }
        final int pathLength = routePathLength(buf, offset, length);
        if (pathLength > DescriptorField.ROUTE.maxBytes())
        {
            return FieldProblem.TOO_LONG;
        }
        int segmentStart = offset + 1;
        final int end = offset + pathLength;
        for (int i = offset + 1; i <= end; i++)
        {
            if (i == end || buf.getByte(i) == '/')
            {
                final int segmentLength = i - segmentStart;
                if ((segmentLength == 1 && buf.getByte(segmentStart) == '.') ||
                    (segmentLength == 2 && buf.getByte(segmentStart) == '.' && buf.getByte(segmentStart + 1) == '.'))
                {
                    return FieldProblem.DOT_SEGMENT;
                }
                segmentStart = i + 1;
            }
            else if (buf.getByte(i) == ' ')
            {
                return FieldProblem.INVALID_CHARACTER;
            }
        }
        return FieldProblem.NONE;
    }

    private static FieldProblem checkChars(final ByteBuf buf, final int offset, final int length, final DescriptorField field)
    {
        for (int i = offset, end = offset + length; i < end; i++)
        {
            if (!allowed(field, buf.getByte(i)))
            {
                return FieldProblem.INVALID_CHARACTER;
            }
        }
        return FieldProblem.NONE;
    }

    private static boolean allowed(final DescriptorField field, final byte b)
    {
        final boolean alnum = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9');
        switch (field)
        {
            case METHOD:
                return alnum || "!#$%&'*+-.^_`|~".indexOf(b) >= 0;
            case CLIENT_IP:
                return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F') || b == '.' || b == ':';
            case REGION:
                return alnum || b == '-' || b == '_';
            default:
                return true;
        }
    }

    static String allowedCharacters(final DescriptorField field)
    {
        switch (field)
        {
            case METHOD: return "letters, digits and !#$%&'*+-.^_`|~";
            case CLIENT_IP: return "hex digits, '.' and ':'";
            case REGION: return "letters, digits, '-' and '_'";
            case ROUTE: return "no spaces";
            default: return "any printable character";
        }
    }

    /** Strict UTF-8 (no overlongs, no surrogates, at most U+10FFFF) with no C0, DEL or C1 control characters. */
    static FieldProblem checkUtf8NoControl(final ByteBuf buf, final int offset, final int length)
    {
        int i = offset;
        final int end = offset + length;
        while (i < end)
        {
            if (end - i >= Long.BYTES && printableAscii(buf.getLongLE(i)))
            {
                i += Long.BYTES; // the usual field: eight bytes at a time, each a printable ASCII character
                continue;
            }
            final int b0 = buf.getByte(i) & 0xFF;
            if (b0 < 0x80)
            {
                if (b0 < 0x20 || b0 == 0x7F)
                {
                    return FieldProblem.CONTROL_CHARACTER;
                }
                i++;
                continue;
            }
            final int sequence = Utf8.sequenceLength(buf, i, end);
            if (sequence < 0)
            {
                return FieldProblem.INVALID_UTF8;
            }
            if (Utf8.isC1Control(buf, i, sequence))
            {
                return FieldProblem.CONTROL_CHARACTER;
            }
            i += sequence;
        }
        return FieldProblem.NONE;
    }

    /**
     * Whether every byte of {@code word} is printable ASCII (0x20 to 0x7E): none has its high bit set,
     * none is below 0x20 and none is 0x7F. Exact: a borrow in the subtractions starts only at a byte
     * below what is subtracted from it, so a flagged byte means some byte of the word is out of range.
     */
    static boolean printableAscii(final long word)
    {
        final long highBits = 0x8080_8080_8080_8080L;
        final long belowSpace = (word - 0x2020_2020_2020_2020L) & ~word & highBits;
        final long delete = word ^ 0x7F7F_7F7F_7F7F_7F7FL;
        final long anyDelete = (delete - 0x0101_0101_0101_0101L) & ~delete & highBits;
        return ((word & highBits) | belowSpace | anyDelete) == 0;
    }

    static boolean isAsciiSpace(final byte b)
    {
        return b == ' ' || b == '\t' || b == '\n' || b == '\r';
    }

    /** ASCII lower case of {@code b}; other bytes unchanged. */
    public static byte lower(final byte b)
    {
        return (b >= 'A' && b <= 'Z') ? (byte)(b + 32) : b;
    }

    /** ASCII upper case of {@code b}; other bytes unchanged. */
    public static byte upper(final byte b)
    {
        return (b >= 'a' && b <= 'z') ? (byte)(b - 32) : b;
    }
}
