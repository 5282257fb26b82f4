package dev.limiter.protocol;

import dev.limiter.protocol.policy.EnvoyDescriptor;
import dev.limiter.protocol.policy.EnvoyEntry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * How a descriptor of Envoy's rate limit service (a domain and ordered key/value entries) becomes
 * one of our request descriptors, and how a policy's {@code selector.envoy} becomes the route
 * template that matches it. The one owner of that mapping: the gateway builds requests with it,
 * policies compile with it, so both always agree.
 *
 * <ul>
 *   <li>namespace: the entry carries {@link AcquireCodec#ENVOY_FLAG}, so that only envoy selectors
 *       decide it and no other request can reach them (no field value makes a request an Envoy one);</li>
 *   <li>route: {@code /envoy/<domain>/<key1>/<value1>/...}, each part one path segment (see
 *       {@link #segment}); a selector's value left empty becomes a parameter matching any value;</li>
 *   <li>tenant: every value of the descriptor, so each distinct combination has its own bucket
 *       under scope TENANT (see {@link #bucketKey}).</li>
 * </ul>
 * Values are taken as the bytes Envoy sent: any byte string (a header value may hold bytes that
 * are not UTF-8, or control characters) makes a valid route and tenant, and distinct values stay
 * distinct.
 */
public final class EnvoyDescriptors
{
    /** Most entries a selector (and so a descriptor that a policy can select) may have. */
    public static final int MAX_ENTRIES = 5;
    /** Longest domain or key, in UTF-8 bytes. */
    public static final int MAX_NAME_BYTES = 128;
    /** Longest value a selector may fix, in UTF-8 bytes. */
    public static final int MAX_VALUE_BYTES = 255;

    private static final String ROUTE_PREFIX = "/envoy";
    /** A segment longer than this is replaced by its digest, so that five entries always fit a route. */
    private static final int MAX_SEGMENT_CHARS = 41;
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private EnvoyDescriptors()
    {
    }

    /** The route of a request for this descriptor (keys and values in the descriptor's order, as bytes). */
    public static String route(final byte[] domain, final List<byte[]> keys, final List<byte[]> values)
    {
        final StringBuilder route = new StringBuilder(ROUTE_PREFIX).append('/').append(segment(domain));
        for (int i = 0; i < keys.size(); i++)
        {
            route.append('/').append(segment(keys.get(i))).append('/').append(segment(values.get(i)));
        }
        return route.toString();
    }

    /** {@link #route(byte[], List, List)} of text (UTF-8). */
    public static String route(final String domain, final List<String> keys, final List<String> values)
    {
        return route(utf8(domain), keys.stream().map(EnvoyDescriptors::utf8).toList(), values.stream().map(EnvoyDescriptors::utf8).toList());
    }

    /** The route template a selector compiles to: its values fixed, or a parameter where left empty. */
    public static String template(final EnvoyDescriptor selector)
    {
        final StringBuilder route = new StringBuilder(ROUTE_PREFIX).append('/').append(segment(selector.getDomain()));
        for (int i = 0; i < selector.getEntriesCount(); i++)
        {
            final EnvoyEntry entry = selector.getEntries(i);
            route.append('/').append(segment(entry.getKey())).append('/')
                .append(entry.getValue().isEmpty() ? "{value" + i + "}" : segment(entry.getValue()));
        }
        return route.toString();
    }

    /**
     * The tenant field of a request for these values: {@code e:} and the values joined by
     * {@code |}, each value's valid UTF-8 kept as it is but for control characters, space, {@code %}
     * and {@code |}, which are percent-encoded byte by byte, as is every byte of a sequence that is
     * not valid UTF-8; past 64 bytes, {@code e~} and a digest of that text. Any bytes make a valid
     * tenant, and distinct values give distinct keys.
     */
    public static String bucketKey(final List<byte[]> values)
    {
        final StringBuilder key = new StringBuilder("e:");
        for (int i = 0; i < values.size(); i++)
        {
            if (i > 0)
            {
                key.append('|');
            }
            appendEscaped(key, values.get(i));
        }
        final String text = key.toString();
        return text.getBytes(StandardCharsets.UTF_8).length <= DescriptorField.TENANT.maxBytes() ? text : "e~" + digest(text);
    }

    /** {@link #bucketKey(List)} of text (UTF-8). */
    public static String bucketKeyOfText(final List<String> values)
    {
        return bucketKey(values.stream().map(EnvoyDescriptors::utf8).toList());
    }

    private static void appendEscaped(final StringBuilder key, final byte[] value)
    {
        final ByteBuf bytes = Unpooled.wrappedBuffer(value);
        int i = 0;
        while (i < value.length)
        {
            final int b = value[i] & 0xFF;
            if (b < 0x80)
            {
                if (b <= 0x20 || b == 0x7F || b == '%' || b == '|')
                {
                    escape(key, b);
                }
                else
                {
                    key.append((char)b);
                }
                i++;
                continue;
            }
            final int length = Utf8.sequenceLength(bytes, i, value.length);
            if (length < 0 || Utf8.isC1Control(bytes, i, length))
            {
                // Not UTF-8 (or a control character): its first byte alone is written escaped, and
                // the next byte starts afresh, so every byte of an invalid sequence is escaped.
                final int stop = length < 0 ? i + 1 : i + length;
                for (; i < stop; i++)
                {
                    escape(key, value[i] & 0xFF);
                }
                continue;
            }
            key.append(new String(value, i, length, StandardCharsets.UTF_8));
            i += length;
        }
    }

    private static void escape(final StringBuilder out, final int b)
    {
        out.append('%').append(HEX[b >>> 4]).append(HEX[b & 0xF]);
    }

    private static byte[] utf8(final String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Precedence among selectors of the same domain and keys: an exact value at an earlier entry
     * outranks anything at the later ones (the order envoyproxy/ratelimit walks its tree in).
     * Higher is more specific; at most {@code 2^MAX_ENTRIES - 1}.
     */
    public static long precedence(final EnvoyDescriptor selector)
    {
        long bits = 0;
        for (int i = 0; i < selector.getEntriesCount() && i < MAX_ENTRIES; i++)
        {
            if (!selector.getEntries(i).getValue().isEmpty())
            {
                bits |= 1L << (MAX_ENTRIES - 1 - i);
            }
        }
        return bits;
    }

    /** Adds what is wrong with a selector to {@code errors}, each naming the field and the rule. */
    public static void check(final EnvoyDescriptor selector, final String where, final List<String> errors)
    {
        checkName(selector.getDomain(), where + ".domain", errors);
        if (selector.getEntriesCount() == 0 || selector.getEntriesCount() > MAX_ENTRIES)
        {
            errors.add(where + ".entries: 1 to " + MAX_ENTRIES + " entries (the descriptor's key/value pairs, in order), was " +
                selector.getEntriesCount());
        }
        for (int i = 0; i < selector.getEntriesCount(); i++)
        {
            final EnvoyEntry entry = selector.getEntries(i);
            checkName(entry.getKey(), where + ".entries[" + i + "].key", errors);
            if (entry.getValue().getBytes(StandardCharsets.UTF_8).length > MAX_VALUE_BYTES)
            {
                errors.add(where + ".entries[" + i + "].value: at most " + MAX_VALUE_BYTES + " bytes");
            }
        }
    }

    private static void checkName(final String name, final String where, final List<String> errors)
    {
        if (name.isEmpty())
        {
            errors.add(where + ": required");
        }
        else if (name.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES)
        {
            errors.add(where + ": at most " + MAX_NAME_BYTES + " bytes");
        }
    }

    /**
     * One path segment for any text: {@code _} and the text with every byte outside
     * {@code [A-Za-z0-9.~-]} percent-encoded (never empty, never a dot segment, never a template
     * parameter), or, when that is long, {@code ~} and a 128-bit digest of the text.
     */
    static String segment(final String text)
    {
        return segment(utf8(text));
    }

    /** {@link #segment(String)} of any bytes. */
    static String segment(final byte[] utf8)
    {
        final StringBuilder segment = new StringBuilder(utf8.length + 1).append('_');
        for (final byte b : utf8)
        {
            final int c = b & 0xFF;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '~' || c == '-')
            {
                segment.append((char)c);
            }
            else
            {
                segment.append('%').append(HEX[c >>> 4]).append(HEX[c & 0xF]);
            }
            if (segment.length() > MAX_SEGMENT_CHARS)
            {
                return "~" + digest(utf8);
            }
        }
        return segment.toString();
    }

    private static String digest(final String text)
    {
        return digest(utf8(text));
    }

    private static String digest(final byte[] bytes)
    {
        try
        {
            final byte[] sha = MessageDigest.getInstance("SHA-256").digest(bytes);
            return HexFormat.of().formatHex(sha, 0, 16);
        }
        catch (final NoSuchAlgorithmException e)
        {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }
}
