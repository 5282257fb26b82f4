package dev.limiter.client;

import dev.limiter.protocol.DescriptorField;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DescriptorTest
{
    @Test
    void shouldNormaliseLikeTheServer()
    {
        final Descriptor d = Descriptor.builder().tenant("  acme ").principal("Alice").method(" post").route(" /v1//orders/42/?x=1#f ")
            .clientIp("2001:DB8::1").region("EU-West-1").build();
        assertEquals("acme", d.tenant());
        assertEquals("Alice", d.principal(), "principals are case sensitive");
        assertEquals("POST", d.method());
        assertEquals("/v1/orders/42", d.route());
        assertEquals("2001:db8::1", d.clientIp());
        assertEquals("eu-west-1", d.region());
        assertEquals(Descriptor.builder().tenant("acme").principal("Alice").method("POST").route("/v1/orders/42")
            .clientIp("2001:db8::1").region("eu-west-1").build(), d, "equal after normalisation");
    }

    private static InvalidDescriptorException invalid(final Descriptor.Builder builder)
    {
        return assertThrows(InvalidDescriptorException.class, builder::build);
    }

    @Test
    void shouldRejectBadFieldsNamingTheFieldAndTheRule()
    {
        InvalidDescriptorException e = invalid(Descriptor.builder().route("/x"));
        assertEquals(DescriptorField.TENANT, e.field());
        assertEquals("tenant is required and was empty", e.getMessage());

        e = invalid(Descriptor.builder().tenant("t".repeat(65)).route("/x"));
        assertEquals("tenant is too long (65 bytes; at most 64)", e.getMessage());

        e = invalid(Descriptor.builder().tenant("a\u0000b").route("/x"));
        assertTrue(e.getMessage().contains("control character"));

        e = invalid(Descriptor.builder().tenant("a").route("x"));
        assertEquals(DescriptorField.ROUTE, e.field());

        e = invalid(Descriptor.builder().tenant("a").route("/a/./b"));
        assertTrue(e.getMessage().contains("'.' or '..'"));

        e = invalid(Descriptor.builder().tenant("\uD800").route("/x"));
        assertTrue(e.getMessage().contains("not valid UTF-8"), e.getMessage());

        e = invalid(Descriptor.builder().tenant("a").route("/x").method("GET /"));
        assertTrue(e.getMessage().startsWith("method contains a character this field does not allow"), e.getMessage());

        e = invalid(Descriptor.builder().tenant("a").route("/x").clientIp("localhost"));
        assertEquals(DescriptorField.CLIENT_IP, e.field());
    }

    @Test
    void shouldAcceptMultibyteTextWithinByteLimits()
    {
        assertEquals("🚀".repeat(16), Descriptor.builder().tenant("🚀".repeat(16)).route("/x").build().tenant());
        assertThrows(InvalidDescriptorException.class, () -> Descriptor.builder().tenant("🚀".repeat(17)).route("/x").build());
    }
}
