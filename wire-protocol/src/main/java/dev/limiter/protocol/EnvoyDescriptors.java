package dev.limiter.protocol;

import dev.limiter.protocol.policy.EnvoyDescriptor;
import dev.limiter.protocol.policy.EnvoyEntry;
import io.netty.buffer.ByteBuf;

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
 *   <li>method: {@value #METHOD} (reserved: only envoy selectors match it, and nothing else does);</li>
 *   <li>route: {@code /envoy/<domain>/<key1>/<value1>/...}, each part one path segment (see
 *       {@link #segment}); a selector's value left empty becomes a parameter matching any value;</li>
 *   <li>tenant: every value of the descriptor, so each distinct combination has its own bucket
 *       under scope TENANT (see {@link #bucketKey}).</li>
 * </ul>
 */
public final class EnvoyDescriptors
{
    /** The method of every request built from an Envoy descriptor. */
    public static final String METHOD = "ENVOY";
    /** Most entries a selector (and so a descriptor that a policy can select) may have. */
    public static final int MAX_ENTRIES = 5;
    /** Longest domain or key, in UTF-8 bytes. */
    public static final int MAX_NAME_BYTES = 128;
    /** Longest value a selector may fix, in UTF-8 bytes. */
    public static final int MAX_VALUE_BYTES = 255;

    private static final String ROUTE_PREFIX = "/envoy";
    /** A segment longer than this is replaced by its digest, so that five entries always fit a route. */
    private static final int MAX_SEGMENT_CHARS = 41;
    private static final byte[] METHOD_BYTES = METHOD.getBytes(StandardCharsets.US_ASCII);
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private EnvoyDescriptors()
    {
    }

    /** The route of a request for this descriptor (keys and values in the descriptor's order). */
    public static String route(final String domain, final List<String> keys, final List<String> values)
    {
        final StringBuilder route = new StringBuilder(ROUTE_PREFIX).append('/').append(segment(domain));
        for (int i = 0; i < keys.size(); i++)
        {
            route.append('/').append(segment(keys.get(i))).append('/').append(segment(values.get(i)));
        }
        return route.toString();
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
     * {@code |} ({@code %}, {@code |}, spaces and control bytes percent-encoded), or, past 64
     * bytes, {@code e~} and a digest of that text. Distinct values give distinct keys.
     */
    public static String bucketKey(final List<String> values)
    {
        final StringBuilder key = new StringBuilder("e:");
        for (int i = 0; i < values.size(); i++)
        {
            if (i > 0)
            {
                key.append('|');
            }
            final String value = values.get(i);
            for (int j = 0; j < value.length(); j++)
            {
                // Only ASCII is escaped, so escaping chars is escaping UTF-8 bytes; the rest passes as it is.
                final char c = value.charAt(j);
                if (c <= 0x20 || c == 0x7F || c == '%' || c == '|')
                {
                    key.append('%').append(HEX[c >>> 4]).append(HEX[c & 0xF]);
                }
                else
                {
                    key.append(c);
                }
            }
        }
        final String text = key.toString();
        return text.getBytes(StandardCharsets.UTF_8).length <= DescriptorField.TENANT.maxBytes() ? text : "e~" + digest(text);
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

    /** Whether a request's method (case-insensitive) is the one reserved for Envoy descriptors. Allocates nothing. */
    public static boolean isEnvoyMethod(final ByteBuf buf, final int offset, final int length)
    {
        if (length != METHOD_BYTES.length)
        {
            return false;
        }
        for (int i = 0; i < length; i++)
        {
            if (DescriptorRules.lower(buf.getByte(offset + i)) != DescriptorRules.lower(METHOD_BYTES[i]))
            {
                return false;
            }
        }
        return true;
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
        final byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
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
                return "~" + digest(text);
            }
        }
        return segment.toString();
    }

    private static String digest(final String text)
    {
        try
        {
            final byte[] sha = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(sha, 0, 16);
        }
        catch (final NoSuchAlgorithmException e)
        {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }
}
