package dev.limiter.server.admin;

import io.netty.handler.codec.http.HttpMethod;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Method and path pattern to handler. A pattern is a path whose segments are literal, or
 * {@code {name}} for any one non-empty segment, which the match hands over by name. A path that
 * some pattern matches, with a method none of them serves, is told which methods it allows (405);
 * a path no pattern matches is unknown (404). Built once, then read only.
 *
 * @param <H> what answers a request
 */
final class RouteTable<H>
{
    private final List<Route<H>> routes = new ArrayList<>();
    private final Set<String> patterns = new LinkedHashSet<>();

    private record Route<H>(HttpMethod method, String[] segments, H handler)
    {
    }

    /**
     * What a request's method and path found.
     *
     * @param handler the route's handler, or null when none serves this method and path
     * @param params  the path's {@code {name}} segments by name
     * @param allow   when no handler: the methods the path allows ({@code "GET, PUT"}), or null for an unknown path
     */
    record Match<H>(H handler, Map<String, String> params, String allow)
    {
        /** The path segment that {@code {name}} matched. */
        String param(final String name)
        {
            return params.get(name);
        }
    }

    /**
     * Adds a route; the first one added for a method and a path wins.
     *
     * @param pattern {@code /v1/policies/{id}}
     */
    RouteTable<H> add(final HttpMethod method, final String pattern, final H handler)
    {
        if (!pattern.startsWith("/"))
        {
            throw new IllegalArgumentException("a route's pattern starts with '/': " + pattern);
        }
        routes.add(new Route<>(method, segments(pattern), handler));
        patterns.add(pattern);
        return this;
    }

    /** Finds the route of a method and a path (decoded, without its query). */
    Match<H> match(final HttpMethod method, final String path)
    {
        final String[] parts = segments(path);
        final Set<String> allowed = new LinkedHashSet<>();
        for (final Route<H> route : routes)
        {
            final Map<String, String> params = matches(route.segments(), parts);
            if (params == null)
            {
                continue;
            }
            if (route.method().equals(method))
            {
                return new Match<>(route.handler(), params, null);
            }
            allowed.add(route.method().name());
        }
        return new Match<>(null, Map.of(), allowed.isEmpty() ? null : String.join(", ", allowed));
    }

    /** Every pattern, in the order they were added: what an unknown path is told to try. */
    List<String> patterns()
    {
        return List.copyOf(patterns);
    }

    private static String[] segments(final String path)
    {
        return path.startsWith("/") ? path.substring(1).split("/", -1) : path.split("/", -1);
    }

    /** The pattern's {@code {name}} segments by name, or null when the path does not match it. */
    private static Map<String, String> matches(final String[] pattern, final String[] parts)
    {
        if (pattern.length != parts.length)
        {
            return null;
        }
        Map<String, String> params = Map.of();
        for (int i = 0; i < pattern.length; i++)
        {
            final String segment = pattern[i];
            if (segment.startsWith("{") && segment.endsWith("}"))
            {
                if (parts[i].isEmpty())
                {
                    return null;
                }
                if (params.isEmpty())
                {
                    params = new LinkedHashMap<>();
                }
                params.put(segment.substring(1, segment.length() - 1), parts[i]);
            }
            else if (!segment.equals(parts[i]))
            {
                return null;
            }
        }
        return params;
    }
}
