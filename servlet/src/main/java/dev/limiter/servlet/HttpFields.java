package dev.limiter.servlet;

import java.nio.charset.StandardCharsets;

/**
 * How a request's method, forwarding header and decoded path become descriptor fields that no client
 * can use to step around a policy. Free of the Servlet API: the Spring starter's WebFilter applies the
 * same rules to WebFlux requests.
 */
public final class HttpFields
{
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private HttpFields()
    {
    }

    /**
     * A request's method as the limiter sees it: one of {@link RequestDescriptors#HTTP_METHODS} as
     * it is (HEAD as GET), anything else {@link RequestDescriptors#OTHER_METHOD}.
     */
    public static String method(final String method)
    {
        if ("HEAD".equals(method))
        {
            return "GET"; // a servlet's doHead runs doGet (so do Spring's GET mappings): it costs what a GET does
        }
        return method != null && RequestDescriptors.HTTP_METHODS.contains(method) ? method : RequestDescriptors.OTHER_METHOD;
    }

    /**
     * The last address of a forwarding header's lines ({@code X-Forwarded-For}: each proxy appends
     * the address it saw, so only the last is the one the proxy nearest the application saw; the
     * ones before it, and any line before the last, are the client's to write), or null when there
     * is none.
     */
    public static String lastAddress(final java.util.Enumeration<String> lines)
    {
        return lastAddress(lines == null ? java.util.List.of() : java.util.Collections.list(lines));
    }

    /** {@link #lastAddress(java.util.Enumeration)} of a header's lines as a list (null: none). */
    public static String lastAddress(final Iterable<String> lines)
    {
        String last = null;
        for (final String line : lines == null ? java.util.List.<String>of() : lines)
        {
            if (line != null && !line.isBlank())
            {
                last = line;
            }
        }
        if (last == null)
        {
            return null;
        }
        final String address = last.substring(last.lastIndexOf(',') + 1).trim();
        return address.isEmpty() ? null : withoutZone(address);
    }

    /** An address without an IPv6 zone ({@code fe80::1%eth0}: a link-local peer), which names the host's interface, not the client. */
    public static String withoutZone(final String address)
    {
        final int zone = address == null ? -1 : address.indexOf('%');
        return zone < 0 ? address : address.substring(0, zone);
    }

    /**
     * The route of a path the container decoded and normalised (servlet path and path info:
     * {@code /%6Frders/1} and {@code /orders;x=1/1} are {@code /orders/1}, so an encoding cannot
     * dodge a route's policy). What the route rules would cut or refuse is percent-encoded again:
     * a {@code ?} or {@code #} (the route would end there, and match a shorter template), a
     * {@code %}, spaces and control characters. So every path the application can be asked for is
     * a route, and the route the policy sees is the path the application serves.
     */
    public static String route(final String decodedPath)
    {
        if (decodedPath.isEmpty())
        {
            return "/";
        }
        StringBuilder route = null;
        for (int i = 0; i < decodedPath.length(); )
        {
            final int c = decodedPath.codePointAt(i);
            final int next = i + Character.charCount(c);
            final boolean escape = c <= 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == '%' || c == '?' || c == '#' ||
                (Character.isSurrogate(decodedPath.charAt(i)) && next == i + 1);
            if (escape && route == null)
            {
                route = new StringBuilder(decodedPath.length() + 8).append(decodedPath, 0, i);
            }
            if (escape)
            {
                for (final byte b : decodedPath.substring(i, next).getBytes(StandardCharsets.UTF_8))
                {
                    route.append('%').append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
                }
            }
            else if (route != null)
            {
                route.appendCodePoint(c);
            }
            i = next;
        }
        return route == null ? decodedPath : route.toString();
    }
}
