package dev.limiter.server.admin;

import io.netty.handler.codec.http.HttpMethod;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class RouteTableTest
{
    private final RouteTable<String> routes = new RouteTable<String>()
        .add(HttpMethod.GET, "/v1/policies", "list")
        .add(HttpMethod.GET, "/v1/policies/{id}", "get")
        .add(HttpMethod.PUT, "/v1/policies/{id}", "put")
        .add(HttpMethod.DELETE, "/v1/policies/{id}", "delete")
        .add(HttpMethod.GET, "/v1/policies/{id}/history", "history");

    @Test
    void shouldFindTheRouteOfAMethodAndALiteralPath()
    {
        final RouteTable.Match<String> match = routes.match(HttpMethod.GET, "/v1/policies");
        assertEquals("list", match.handler());
        assertNull(match.allow());
    }

    @Test
    void shouldHandOverTheSegmentAPlaceholderMatched()
    {
        final RouteTable.Match<String> put = routes.match(HttpMethod.PUT, "/v1/policies/orders");
        assertEquals("put", put.handler());
        assertEquals("orders", put.param("id"));
        final RouteTable.Match<String> history = routes.match(HttpMethod.GET, "/v1/policies/orders/history");
        assertEquals("history", history.handler());
        assertEquals("orders", history.param("id"));
        assertEquals("get", routes.match(HttpMethod.GET, "/v1/policies/history").handler(),
            "a literal later in another pattern is still an id here");
    }

    @Test
    void shouldListTheAllowedMethodsInTheOrderAddedWhenAPathMatchesButItsMethodDoesNot()
    {
        final RouteTable.Match<String> post = routes.match(HttpMethod.POST, "/v1/policies/orders");
        assertNull(post.handler());
        assertEquals("GET, PUT, DELETE", post.allow());
        assertEquals("GET", routes.match(HttpMethod.HEAD, "/v1/policies").allow(), "HEAD is a method like any other");
    }

    @Test
    void shouldFindNothingForAnUnknownPathAnEmptySegmentOrAnotherNumberOfSegments()
    {
        for (final String path : new String[] {"/v1/nothing", "/v1", "/v1/", "/v1/policies/", "/v1/policies//history",
            "/v1/policies/a/b/c", "/v1/policies/a/future"})
        {
            final RouteTable.Match<String> match = routes.match(HttpMethod.GET, path);
            assertNull(match.handler(), path);
            assertNull(match.allow(), path);
        }
    }

    @Test
    void shouldListEveryPatternOnceInTheOrderAdded()
    {
        assertEquals(List.of("/v1/policies", "/v1/policies/{id}", "/v1/policies/{id}/history"), routes.patterns());
    }

    @Test
    void shouldRefuseAPatternThatIsNotAnAbsolutePath()
    {
        assertThrows(IllegalArgumentException.class, () -> new RouteTable<String>().add(HttpMethod.GET, "v1/x", "x"));
    }
}
