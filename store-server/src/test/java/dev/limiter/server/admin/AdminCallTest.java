package dev.limiter.server.admin;

import dev.limiter.protocol.policy.Policy;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What every admin route reads alike from its request: query values, numbers, a body and its id. */
class AdminCallTest
{
    private static AdminCall call(final String uri, final String body)
    {
        return new AdminCall(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.PUT, uri,
            Unpooled.copiedBuffer(body, StandardCharsets.UTF_8)), "orders", new QueryStringDecoder(uri), "alice");
    }

    @Test
    void anEmptyQueryValueIsNoValueAndAMissingReasonIsEmpty()
    {
        final AdminCall call = call("/v1/policies/orders?policy=&owner=bob&owner=carol", "");
        assertNull(call.first("policy"));
        assertNull(call.first("since"));
        assertEquals("bob", call.first("owner"), "the first of several");
        assertEquals("", call.reason());
        assertEquals("moved", call("/v1/x?reason=moved", "").reason());
    }

    @Test
    void aNumberOutsideItsRangeOrNotWholeIsRefusedNamingTheRangeAndTheValue()
    {
        assertEquals(100, call("/v1/x", "").number("limit", 100, 1, 4096), "absent: the default");
        assertEquals(4096, call("/v1/x?limit=4096", "").number("limit", 100, 1, 4096));
        for (final String bad : new String[] {"0", "4097", "1.5", "ten", "99999999999999999999"})
        {
            final BadRequest refused = assertThrows(BadRequest.class,
                () -> call("/v1/x?limit=" + bad, "").number("limit", 100, 1, 4096), bad);
            assertEquals("limit: must be a whole number from 1 to 4096, was '" + bad + "'", refused.getMessage());
        }
        assertEquals(Long.MAX_VALUE, call("/v1/x?since=" + Long.MAX_VALUE, "").number("since", 0L, 0, Long.MAX_VALUE));
    }

    @Test
    void aBodyThatIsEmptyOrNotTheMessageIsRefusedSayingNothingChanged()
    {
        final BadRequest empty = assertThrows(BadRequest.class, () -> call("/v1/x", " ").parse(Policy.newBuilder(),
            "a Policy"));
        assertEquals("the request body must be a Policy as JSON; it was empty; nothing changed", empty.getMessage());
        final BadRequest wrong = assertThrows(BadRequest.class, () -> call("/v1/x", "{\"rate\":\"fast\"}")
            .parse(Policy.newBuilder(), "a Policy"));
        assertTrue(wrong.getMessage().startsWith("the request body is not a Policy: "), wrong.getMessage());
        assertTrue(wrong.getMessage().endsWith("; nothing changed"), wrong.getMessage());
        final Policy.Builder policy = Policy.newBuilder();
        call("/v1/x", "{\"id\":\"orders\",\"rate\":5}").parse(policy, "a Policy");
        assertEquals(5L, policy.getRate());
    }

    @Test
    void aBodyMayLeaveItsIdOutButNotNameAnother()
    {
        final AdminCall call = call("/v1/policies/orders", "");
        call.requireSameId("");
        call.requireSameId("orders");
        final BadRequest other = assertThrows(BadRequest.class, () -> call.requireSameId("payments"));
        assertEquals("the body's id 'payments' differs from the path's 'orders'; nothing changed", other.getMessage());
    }

    @Test
    void aChangeIsMadeByTheCallsActor()
    {
        assertEquals("alice", call("/v1/x", "").command().getActor());
    }
}
