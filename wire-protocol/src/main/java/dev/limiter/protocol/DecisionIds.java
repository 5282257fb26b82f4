package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;

/**
 * Decision ids: the one owner of their layout in a result frame and of their printed form.
 * <p>
 * A node gives every answered frame an id base (64 bits, never 0: a per-process random epoch plus a
 * counter), and record {@code i} of that frame is decision {@code (base, i)}, so a decision costs
 * the node nothing to name. The base travels once per frame, in a trailing section of RESULT and
 * BATCH_RESULT, sent only to a peer that listed {@link Features#DECISION_IDS} in HELLO:
 *
 * <pre>
 * ... dictionary | u16 leases | leases | u16 refusals | refusals | u16 length (8) | i64 id base
 * </pre>
 *
 * The lease and refusal sections are then always written, even listing none. Printed, a decision id
 * is the base as 16 lowercase hex digits, a dash and the record's index: {@code 3f9a0c1be4d27a10-2}.
 */
public final class DecisionIds
{
    /** The section's {@code length} field: the bytes of the id base that follow it. */
    public static final int BASE_LENGTH = 8;
    /** Bytes of the whole section. */
    public static final int SECTION_LENGTH = 2 + BASE_LENGTH;
    /** Longest printed id: 16 hex digits, a dash, at most 5 decimal digits (entries are u16). */
    public static final int MAX_TEXT_LENGTH = 16 + 1 + 5;

    private DecisionIds()
    {
    }

    /** Appends the section naming {@code base} (never 0) as the last bytes of a result body. */
    public static void appendSection(final ByteBuf out, final long base)
    {
        if (base == 0)
        {
            throw new IllegalArgumentException("a decision id base is never 0 (0 means the frame carries none)");
        }
        out.writeShort(BASE_LENGTH);
        out.writeLong(base);
    }

    /** What is wrong with the section from {@code at} to {@code bodyEnd} (the end of the body), or null. */
    public static String sectionProblem(final ByteBuf buffer, final int at, final int bodyEnd)
    {
        if (bodyEnd - at < 2)
        {
            return "result body has " + (bodyEnd - at) + " bytes after the refusal section";
        }
        final int length = buffer.getUnsignedShort(at);
        if (length != BASE_LENGTH)
        {
            return "decision-id section says " + length + " bytes; it is " + BASE_LENGTH;
        }
        if (bodyEnd - at != SECTION_LENGTH)
        {
            return "decision-id section is " + (bodyEnd - at) + " bytes; it is " + SECTION_LENGTH;
        }
        if (buffer.getLong(at + 2) == 0)
        {
            return "decision-id section names base 0, which no node sends";
        }
        return null;
    }

    /** The id base of a section already checked by {@link #sectionProblem}. */
    public static long base(final ByteBuf buffer, final int at)
    {
        return buffer.getLong(at + 2);
    }

    /** The printed id of record {@code entry} of the frame with id base {@code base}. */
    public static String format(final long base, final int entry)
    {
        final String hex = Long.toHexString(base);
        return "0".repeat(16 - hex.length()) + hex + '-' + entry;
    }

    /** Why {@code text} is not a decision id, or null when it is one. */
    public static String problem(final String text)
    {
        if (text == null || text.isEmpty())
        {
            return "a decision id is empty";
        }
        if (text.length() > MAX_TEXT_LENGTH)
        {
            return "'" + shown(text) + "' is not a decision id: longer than " + MAX_TEXT_LENGTH + " characters";
        }
        final int dash = text.indexOf('-');
        if (dash != 16 || !hex(text, 0, 16) || text.length() == 17 || !digits(text, 17))
        {
            return "'" + text + "' is not a decision id: 16 hex digits, a dash and a number, e.g. 3f9a0c1be4d27a10-2";
        }
        if (Integer.parseInt(text, 17, text.length(), 10) > 0xFFFF)
        {
            return "'" + text + "' is not a decision id: the number after the dash is at most 65535";
        }
        if (Long.parseUnsignedLong(text, 0, 16, 16) == 0)
        {
            return "'" + text + "' is not a decision id: its base is 0";
        }
        return null;
    }

    /** The id base of a printed id ({@link #problem} must have accepted it). */
    public static long parseBase(final String text)
    {
        requireValid(text);
        return Long.parseUnsignedLong(text, 0, 16, 16);
    }

    /** The record index of a printed id ({@link #problem} must have accepted it). */
    public static int parseEntry(final String text)
    {
        requireValid(text);
        return Integer.parseInt(text, 17, text.length(), 10);
    }

    /** The printed id in canonical form (lowercase hex, no leading zeros in the entry). */
    public static String canonical(final String text)
    {
        return format(parseBase(text), parseEntry(text));
    }

    private static void requireValid(final String text)
    {
        final String problem = problem(text);
        if (problem != null)
        {
            throw new IllegalArgumentException(problem);
        }
    }

    private static boolean hex(final String text, final int from, final int to)
    {
        for (int i = from; i < to; i++)
        {
            final char c = text.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'))
            {
                return false;
            }
        }
        return true;
    }

    private static boolean digits(final String text, final int from)
    {
        for (int i = from; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if (c < '0' || c > '9')
            {
                return false;
            }
        }
        return true;
    }

    private static String shown(final String text)
    {
        return text.substring(0, 24) + "...";
    }
}
