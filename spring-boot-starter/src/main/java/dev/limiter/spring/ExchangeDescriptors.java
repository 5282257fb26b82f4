package dev.limiter.spring;

import dev.limiter.client.Descriptor;
import dev.limiter.client.InvalidDescriptorException;
import dev.limiter.servlet.HttpFields;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.ServerWebExchange;

import java.net.InetSocketAddress;

/**
 * How {@link LimiterWebFilter} names a WebFlux request to the limiter. Return null to let a request
 * through unlimited. The servlet filter's {@code RequestDescriptors} in WebFlux's terms.
 */
@FunctionalInterface
public interface ExchangeDescriptors
{
    /**
     * @return the request's descriptor, or null when it is not rate-limited
     * @throws InvalidDescriptorException when a field taken from the request cannot be used (answered 400)
     */
    Descriptor describe(ServerWebExchange exchange);

    /**
     * The servlet filter's rules from request headers: tenant from {@code tenantHeader} (a request
     * without it, or every request when {@code tenantHeader} is null: the client address; name a
     * header only a trusted proxy sets, since a client can send any value in it), principal from {@code
     * principalHeader} (null: none), route = the path within
     * the application decoded as WebFlux matches it (each segment percent-decoded, matrix parameters
     * dropped) with what a route would cut percent-encoded again, method as HTTP spells it (HEAD as
     * GET, others OTHER), client IP = the last address of {@code clientIpHeader} (null: the
     * connection's remote address).
     */
    static ExchangeDescriptors fromHeaders(final String tenantHeader, final String principalHeader,
        final String clientIpHeader)
    {
        final boolean tenantFromHeader = tenantHeader != null && !tenantHeader.isBlank();
        return exchange ->
        {
            final ServerHttpRequest request = exchange.getRequest();
            final String clientIp = clientIp(request, clientIpHeader);
            final String tenant = tenantFromHeader ? request.getHeaders().getFirst(tenantHeader) : null;
            final Descriptor.Builder descriptor = Descriptor.builder()
                .tenant(tenant == null || tenant.isBlank() ? clientIp : tenant)
                .route(HttpFields.route(decodedPath(request.getPath().pathWithinApplication())))
                .method(HttpFields.method(request.getMethod().name()))
                .clientIp(clientIp);
            if (principalHeader != null && !principalHeader.isBlank())
            {
                descriptor.principal(request.getHeaders().getFirst(principalHeader));
            }
            return descriptor.build();
        };
    }

    /** The path as WebFlux's handler mappings match it: segments decoded, without their ;parameters. */
    static String decodedPath(final PathContainer path)
    {
        final StringBuilder decoded = new StringBuilder();
        for (final PathContainer.Element element : path.elements())
        {
            decoded.append(element instanceof PathContainer.PathSegment segment ? segment.valueToMatch() :
                element.value());
        }
        return decoded.toString();
    }

    private static String clientIp(final ServerHttpRequest request, final String clientIpHeader)
    {
        if (clientIpHeader != null && !clientIpHeader.isBlank())
        {
            final String forwarded = HttpFields.lastAddress(request.getHeaders().get(clientIpHeader));
            if (forwarded != null)
            {
                return forwarded;
            }
        }
        final InetSocketAddress remote = request.getRemoteAddress();
        // None (no socket behind the request): no client IP, and with no tenant header the descriptor
        // lacks its tenant, which Descriptor.Builder refuses: that request alone is answered 400.
        return remote == null || remote.getAddress() == null ? null :
            HttpFields.withoutZone(remote.getAddress().getHostAddress());
    }
}
