package dev.limiter.servlet;

import dev.limiter.client.Descriptor;
import dev.limiter.client.InvalidDescriptorException;
import jakarta.servlet.http.HttpServletRequest;

import java.util.Set;

/**
 * How a {@link LimiterFilter} names the caller of an HTTP request to the limiter: the
 * {@link Descriptor} its policies match (tenant, principal, route, method, client IP). Return
 * null to let a request through unlimited (health checks, say).
 */
@FunctionalInterface
public interface RequestDescriptors
{

    /**
     * @return the request's descriptor, or null when the request is not rate-limited
     * @throws InvalidDescriptorException when a field taken from the request cannot be used (the
     *                                    filter answers 400 naming the field)
     */
    Descriptor describe(HttpServletRequest request);

    /** The methods a request's method is passed on as: RFC 9110's and PATCH, as HTTP spells them (case-sensitive). */
    Set<String> HTTP_METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH");
    /**
     * What any other method becomes, so that a client's made-up method is one more method a policy may select, never a
     * way around one.
     */
    String OTHER_METHOD = "OTHER";

    /**
     * The usual rule, from request headers: tenant from {@code tenantHeader} (when the request has
     * none, or {@code tenantHeader} is null, the client IP, so anonymous callers are limited per
     * address; a client can send any value in a header, so name one only a trusted proxy sets), principal from
     * {@code principalHeader} (null: none), route = the path within the application as the
     * container decoded and normalised it (what a route would cut or refuse percent-encoded again),
     * method = the HTTP method (one of {@link #HTTP_METHODS}, else {@link #OTHER_METHOD}; HEAD
     * counts as GET, whose handler it runs), client IP = the last address of {@code clientIpHeader}
     * (for {@code X-Forwarded-For} from one proxy you trust, which appends the address it saw: the
     * ones before it are whatever the client wrote; null: the connection's remote address).
     */
    static RequestDescriptors fromHeaders(final String tenantHeader, final String principalHeader,
        final String clientIpHeader)
    {
        final boolean tenantFromHeader = tenantHeader != null && !tenantHeader.isBlank();
        return request ->
        {
            final String clientIp = clientIp(request, clientIpHeader);
            final String tenant = tenantFromHeader ? request.getHeader(tenantHeader) : null;
            final String pathInfo = request.getPathInfo();
            final Descriptor.Builder descriptor = Descriptor.builder()
                .tenant(tenant == null || tenant.isBlank() ? clientIp : tenant)
                .route(HttpFields.route(request.getServletPath() + (pathInfo == null ? "" : pathInfo)))
                .method(HttpFields.method(request.getMethod()))
                .clientIp(clientIp);
            if (principalHeader != null && !principalHeader.isBlank())
            {
                descriptor.principal(request.getHeader(principalHeader));
            }
            return descriptor.build();
        };
    }

    private static String clientIp(final HttpServletRequest request, final String clientIpHeader)
    {
        if (clientIpHeader != null && !clientIpHeader.isBlank())
        {
            final String forwarded = HttpFields.lastAddress(request.getHeaders(clientIpHeader));
            if (forwarded != null)
            {
                return forwarded;
            }
        }
        return HttpFields.withoutZone(request.getRemoteAddr());
    }
}
