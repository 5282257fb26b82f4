package dev.limiter.client;

import dev.limiter.protocol.DescriptorField;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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
    void routesDropEmptySegmentsAndTheQueryWhetherOrNotAnythingNeedsDropping()
    {
        final String[][] cases = {
            {"/", "/"}, {"/a", "/a"}, {"/v1/orders/42", "/v1/orders/42"}, {"/a/", "/a"}, {"//", "/"}, {"/a//b", "/a/b"},
            {"//a", "/a"}, {"/a/b//", "/a/b"}, {"/a?x=1", "/a"}, {"/a/?x=1", "/a"}, {"/?x", "/"}, {"/a#top", "/a"},
            {"/café/über", "/café/über"}, {"/café//über/?q=é", "/café/über"}, {" /a/b ", "/a/b"}, {"/a?x=//", "/a"},
        };
        for (final String[] c : cases)
        {
            assertEquals(c[1], Descriptor.builder().tenant("t").route(c[0]).build().route(), c[0]);
            // The same key as the canonical spelling, byte for byte.
            assertEquals(Descriptor.builder().tenant("t").route(c[1]).build(), Descriptor.builder().tenant("t").route(c[0]).build(), c[0]);
        }
    }

    @Test
    void anUnpairedSurrogateAnywhereIsRefusedAndAPairIsText()
    {
        for (final String bad : new String[] {"\uDC00", "a\uD83D", "\uD83Da", "a\uDE80b", "\uDE80\uD83D"})
        {
            final InvalidDescriptorException e = invalid(Descriptor.builder().tenant("t").route("/x").principal(bad));
            assertEquals(DescriptorField.PRINCIPAL, e.field());
            assertTrue(e.getMessage().contains("unpaired surrogate"), e.getMessage());
        }
        assertEquals("a\uD83D\uDE80b", Descriptor.builder().tenant("t").route("/x").principal("a\uD83D\uDE80b").build().principal());
    }

    @Test
    void valuesOutsideAsciiCountTheirUtf8BytesAndAreTrimmedOfAsciiSpaceOnly()
    {
        assertEquals("é".repeat(32), Descriptor.builder().tenant("é".repeat(32)).route("/x").build().tenant(), "64 bytes");
        assertEquals("tenant is too long (66 bytes; at most 64)",
            invalid(Descriptor.builder().tenant("é".repeat(33)).route("/x")).getMessage());
        assertEquals("café", Descriptor.builder().tenant("  café\t").route("/x").build().tenant());
        assertEquals("\u00A0café", Descriptor.builder().tenant("\u00A0café").route("/x").build().tenant(), "a no-break space is not ASCII space");
        final Descriptor unset = Descriptor.builder().tenant("t").route("/x").principal("").clientIp(null).build();
        assertEquals("", unset.principal());
        assertEquals("", unset.clientIp());
        assertEquals(Descriptor.of("t", "/x"), unset);
    }

    @Test
    void shouldAcceptMultibyteTextWithinByteLimits()
    {
        assertEquals("🚀".repeat(16), Descriptor.builder().tenant("🚀".repeat(16)).route("/x").build().tenant());
        assertThrows(InvalidDescriptorException.class, () -> Descriptor.builder().tenant("🚀".repeat(17)).route("/x").build());
    }

    @Test
    void descriptorsACallerMadeToCollideAreStillDistinctAndOrdered()
    {
        // "Aa" and "BB" add the same to a 31-based hash: 2^10 paths of one length share one hash code.
        final java.util.List<Descriptor> colliding = new java.util.ArrayList<>();
        for (int bits = 0; bits < 1 << 10; bits++)
        {
            final StringBuilder path = new StringBuilder("/");
            for (int b = 0; b < 10; b++)
            {
                path.append((bits >> b & 1) == 0 ? "Aa" : "BB");
            }
            colliding.add(Descriptor.of("acme", path.toString()));
        }
        final Descriptor first = colliding.get(0);
        assertTrue(colliding.stream().allMatch(d -> d.hashCode() == first.hashCode()), "a caller can make hashes collide");
        for (final Descriptor d : colliding.subList(1, colliding.size()))
        {
            assertNotEquals(first, d);
            assertTrue(Integer.signum(first.compareTo(d)) == -Integer.signum(d.compareTo(first)) && first.compareTo(d) != 0,
                "ordered, so that a table bin of them is searched as a tree: " + d.route());
        }
        assertEquals(0, first.compareTo(Descriptor.of("acme", first.route())), "0 exactly when equal");
        assertEquals(colliding.size(), new java.util.TreeSet<>(colliding).size());
    }
}
