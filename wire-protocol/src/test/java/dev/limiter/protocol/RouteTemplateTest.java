package dev.limiter.protocol;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RouteTemplateTest
{
    @Test
    void shouldMapConcretePathsToTheirTemplate()
    {
        final RouteTemplate t = RouteTemplate.parse("/v1/orders/{id}");
        assertTrue(t.matches("/v1/orders/123"));
        assertTrue(t.matches("/v1/orders/456"));
        assertTrue(t.matches("/v1//orders/456/"), "empty segments are ignored");
        assertTrue(t.matches("/v1/orders/456?expand=items"), "the query is not part of the route");
        assertFalse(t.matches("/v1/orders"));
        assertFalse(t.matches("/v1/orders/1/items"));
        assertFalse(t.matches("/v1/Orders/1"), "literal segments are case sensitive");
        assertEquals(2, t.literalCount());
    }

    @Test
    void shouldCanonicaliseTheTemplate()
    {
        assertEquals("/v1/orders/{id}", RouteTemplate.parse(" /v1//orders/{id}/ ").canonical());
        assertEquals("/", RouteTemplate.parse("/").canonical());
        assertTrue(RouteTemplate.parse("/").matches("/"));
        assertTrue(RouteTemplate.parse("/").matches("//"));
    }

    @Test
    void shouldRejectMalformedTemplates()
    {
        assertThrows(IllegalArgumentException.class, () -> RouteTemplate.parse("v1/orders"));
        assertThrows(IllegalArgumentException.class, () -> RouteTemplate.parse("/v1/{id"));
        assertThrows(IllegalArgumentException.class, () -> RouteTemplate.parse("/v1/x{id}"));
        assertThrows(IllegalArgumentException.class, () -> RouteTemplate.parse("/v1/../admin"));
        assertThrows(IllegalArgumentException.class, () -> RouteTemplate.parse("/v1/orders?x=1"));
        assertThrows(IllegalArgumentException.class, () -> RouteTemplate.parse("/v1/or ders"));
        assertThrows(IllegalArgumentException.class, () -> RouteTemplate.parse("/v1/\u0001"));
    }
}
