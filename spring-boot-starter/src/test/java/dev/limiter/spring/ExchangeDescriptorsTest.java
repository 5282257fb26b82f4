package dev.limiter.spring;

import dev.limiter.client.Descriptor;
import dev.limiter.client.InvalidDescriptorException;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpMethod;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;

import java.net.InetSocketAddress;
import java.net.URI;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The servlet filter's hostile-input rules, as the WebFlux filter applies them. */
class ExchangeDescriptorsTest
{
    private static final ExchangeDescriptors RULES = ExchangeDescriptors.fromHeaders("X-Tenant-Id", "X-User",
        "X-Forwarded-For");
    private static final InetSocketAddress PROXY = new InetSocketAddress("10.0.0.9", 40000);

    private static Descriptor describe(final MockServerHttpRequest.BaseBuilder<?> request)
    {
        return RULES.describe(MockServerWebExchange.from(request.remoteAddress(PROXY)));
    }

    @Test
    void onlyTheLastForwardedHopIsTheClientAddressWhateverTheClientWroteBeforeIt()
    {
        final Descriptor descriptor = describe(MockServerHttpRequest.get("/v1/orders/1").header("X-Tenant-Id", "acme")
            .header("X-Forwarded-For", "1.2.3.4, 5.6.7.8").header("X-Forwarded-For", "9.9.9.9, 203.0.113.7"));
        assertEquals("203.0.113.7", descriptor.clientIp());
    }

    @Test
    void withoutATenantHeaderTheClientAddressIsTheTenant()
    {
        final Descriptor descriptor = describe(MockServerHttpRequest.get("/v1/orders/1"));
        assertEquals("10.0.0.9", descriptor.tenant());
        assertEquals("10.0.0.9", descriptor.clientIp());
    }

    @Test
    void withNoTenantHeaderConfiguredAClientCannotNameItsTenant()
    {
        final ExchangeDescriptors byAddress = ExchangeDescriptors.fromHeaders(null, null, null);
        final Descriptor descriptor = byAddress.describe(MockServerWebExchange.from(
            MockServerHttpRequest.get("/v1/orders/1").header("X-Tenant-Id", "fresh-bucket-1").remoteAddress(PROXY)));
        assertEquals("10.0.0.9", descriptor.tenant(), "the default: the client address, whatever the request says");
        assertEquals(null, new LimiterProperties().getWeb().getTenantHeader(), "no tenant header unless configured");
    }

    @Test
    void headCountsAsGetAndAMadeUpMethodIsOther()
    {
        assertEquals("GET", describe(MockServerHttpRequest.head("/v1/orders/1")).method());
        assertEquals("OTHER", describe(MockServerHttpRequest.method(HttpMethod.valueOf("BREW"), "/v1/orders/1"))
            .method());
    }

    @Test
    void anEncodedPathIsTheRouteTheApplicationServesAndWhatWouldCutARouteStaysEncoded()
    {
        // As sent on the wire (a URI, not a template the mock would encode again).
        assertEquals("/orders/1", describe(MockServerHttpRequest.method(HttpMethod.GET, URI.create("/%6Frders;x=1/1")))
            .route());
        assertEquals("/files/x%3F/delete", describe(MockServerHttpRequest.method(HttpMethod.GET,
            URI.create("/files/x%3F/delete"))).route());
    }

    @Test
    void aTenantHeaderOfControlCharactersIsRefusedNamingTheField()
    {
        final InvalidDescriptorException refused = assertThrows(InvalidDescriptorException.class,
            () -> describe(MockServerHttpRequest.get("/v1/orders/1").header("X-Tenant-Id", "ac\u0001me")));
        assertEquals("TENANT", refused.field().name());
    }
}
