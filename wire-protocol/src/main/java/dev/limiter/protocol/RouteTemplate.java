package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A route template such as {@code /v1/orders/{id}}: literal segments match exactly (case
 * sensitive), {@code {name}} matches any one segment. Matching follows {@link DescriptorRules}:
 * empty segments are ignored, so {@code /v1//orders/7/} matches {@code /v1/orders/{id}}.
 * Matching allocates nothing.
 */
public final class RouteTemplate
{
    private final String canonical;
    private final byte[] canonicalUtf8;
    /** Literal segment bytes, or null for a parameter. */
    private final byte[][] segments;
    private final int literalCount;

    private RouteTemplate(final String canonical, final byte[][] segments, final int literalCount)
    {
        this.canonical = canonical;
        this.canonicalUtf8 = canonical.getBytes(StandardCharsets.UTF_8);
        this.segments = segments;
        this.literalCount = literalCount;
    }

    /**
     * Parses a template.
     *
     * @throws IllegalArgumentException with what is wrong and what a template looks like
     */
    public static RouteTemplate parse(final String template)
    {
        final String trimmed = template.strip();
        if (!trimmed.startsWith("/"))
        {
            throw new IllegalArgumentException("route template '" + template + "' must start with '/' (e.g. /v1/orders/{id})");
        }
        if (trimmed.indexOf('?') >= 0 || trimmed.indexOf('#') >= 0)
        {
            throw new IllegalArgumentException("route template '" + template + "' must not contain a query or fragment");
        }
        final List<byte[]> parts = new ArrayList<>();
        final StringBuilder canonical = new StringBuilder();
        int literals = 0;
        for (final String segment : trimmed.split("/"))
        {
            if (segment.isEmpty())
            {
                continue;
            }
            canonical.append('/').append(segment);
            if (segment.startsWith("{") || segment.endsWith("}"))
            {
                if (!segment.matches("\\{[A-Za-z_][A-Za-z0-9_]*}"))
                {
                    throw new IllegalArgumentException("route template '" + template + "': segment '" + segment +
                        "' must be a whole-segment parameter like {id} (letters, digits, '_')");
                }
                parts.add(null);
                continue;
            }
            if (segment.equals(".") || segment.equals("..") || segment.contains("{") || segment.contains("}"))
            {
                throw new IllegalArgumentException("route template '" + template + "': segment '" + segment + "' is not allowed");
            }
            final byte[] bytes = segment.getBytes(StandardCharsets.UTF_8);
            final ByteBuf view = Unpooled.wrappedBuffer(bytes);
            final FieldProblem problem = DescriptorRules.checkUtf8NoControl(view, 0, bytes.length);
            if (problem != FieldProblem.NONE || segment.indexOf(' ') >= 0)
            {
                throw new IllegalArgumentException("route template '" + template + "': segment '" + segment +
                    "' " + (problem != FieldProblem.NONE ? problem.text() : "contains a space"));
            }
            parts.add(bytes);
            literals++;
        }
        if (canonical.length() == 0)
        {
            canonical.append('/');
        }
        if (canonical.length() > DescriptorField.ROUTE.maxBytes())
        {
            throw new IllegalArgumentException("route template '" + template + "' is longer than " +
                DescriptorField.ROUTE.maxBytes() + " bytes");
        }
        return new RouteTemplate(canonical.toString(), parts.toArray(new byte[0][]), literals);
    }

    /** The template with empty segments removed, e.g. {@code /v1/orders/{id}}. */
    public String canonical()
    {
        return canonical;
    }

    /** {@link #canonical()} in UTF-8 (shared: callers copy from it and never change it). */
    public byte[] canonicalUtf8()
    {
        return canonicalUtf8;
    }

    /** The template with parameter names erased: equal for two templates that match the same paths. */
    public String shape()
    {
        return canonical.replaceAll("\\{[^/}]*}", "{}");
    }

    /** Number of literal (non-parameter) segments; more literals is more specific. */
    public int literalCount()
    {
        return literalCount;
    }

    /** Whether the route path {@code [offset, offset+length)} (no query) matches this template. */
    public boolean matches(final ByteBuf buf, final int offset, final int length)
    {
        final int end = offset + length;
        int position = offset;
        int segment = 0;
        while (true)
        {
            while (position < end && buf.getByte(position) == '/')
            {
                position++;
            }
            if (position >= end)
            {
                return segment == segments.length;
            }
            int stop = position;
            while (stop < end && buf.getByte(stop) != '/')
            {
                stop++;
            }
            if (segment == segments.length)
            {
                return false;
            }
            final byte[] literal = segments[segment];
            if (literal != null && !equalBytes(buf, position, stop - position, literal))
            {
                return false;
            }
            segment++;
            position = stop;
        }
    }

    /** String form of {@link #matches(ByteBuf, int, int)}, for tests and tools. */
    public boolean matches(final String path)
    {
        final byte[] bytes = path.getBytes(StandardCharsets.UTF_8);
        final ByteBuf view = Unpooled.wrappedBuffer(bytes);
        return matches(view, 0, DescriptorRules.routePathLength(view, 0, bytes.length));
    }

    static boolean equalBytes(final ByteBuf buf, final int offset, final int length, final byte[] expected)
    {
        if (length != expected.length)
        {
            return false;
        }
        for (int i = 0; i < length; i++)
        {
            if (buf.getByte(offset + i) != expected[i])
            {
                return false;
            }
        }
        return true;
    }

    @Override
    public String toString()
    {
        return canonical;
    }
}
