package dev.limiter.server.admin;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.server.SampledRejections;
import dev.limiter.server.cluster.Membership;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.RejectedDecisions;
import dev.limiter.server.engine.ShadowComparisons;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The admin API's routes on a single node, called directly: no socket. */
class AdminApiRoutesTest
{
    private static final String TOKEN = "test-token-0123456789abcdef";

    private final PolicyControl control = new PolicyControl(new PolicyState(), null);
    private final AdminApi api = new AdminApi(control, TOKEN, HotKeyReport::getDefaultInstance, this::compare,
        new Membership(null, control, 100), new SampledRejections("n1", new RejectedDecisions()), since -> null);

    /** As the node answers it, over no shards (nothing counted). */
    private CompletableFuture<NodeStatus.Answer> compare(final String id, final long since)
    {
        try
        {
            return ShadowComparisons.of(List.of(), control.state(), id, since).thenApply(c -> new NodeStatus.Answer(200,
                c.toJson()));
        }
        catch (final ShadowComparisons.NothingToCompare e)
        {
            return CompletableFuture.completedFuture(new NodeStatus.Answer(404, e.getMessage()));
        }
    }

    private FullHttpResponse call(final HttpMethod method, final String uri, final String token, final String actor)
    {
        final FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, uri,
            Unpooled.EMPTY_BUFFER);
        if (token != null)
        {
            request.headers().set(HttpHeaderNames.AUTHORIZATION, "Bearer " + token);
        }
        if (actor != null)
        {
            request.headers().set(AdminApi.ACTOR_HEADER, actor);
        }
        final List<FullHttpResponse> answers = new ArrayList<>();
        api.handle(request, new QueryStringDecoder(uri).path(), answers::add);
        assertEquals(1, answers.size(), "one answer to " + method + " " + uri);
        return answers.get(0);
    }

    private FullHttpResponse call(final HttpMethod method, final String uri)
    {
        return call(method, uri, TOKEN, "alice");
    }

    private static String body(final FullHttpResponse response)
    {
        return response.content().toString(StandardCharsets.UTF_8);
    }

    @Test
    void shouldRefuseAHistorySinceThatIsNotMillisecondsNamingIt()
    {
        final FullHttpResponse response = call(HttpMethod.GET, "/v1/history?since=24h");
        assertEquals(400, response.status().code());
        assertTrue(body(response).contains("since: must be milliseconds since the epoch (0 or more), was \\u002724h"),
            body(response));
        assertEquals(404, call(HttpMethod.GET, "/v1/history?since=0").status().code(), "a node keeping none says so");
    }

    @Test
    void shouldAnswerAnUnknownPath404ListingEveryEndpoint()
    {
        final FullHttpResponse response = call(HttpMethod.GET, "/v1/nothing");
        assertEquals(404, response.status().code());
        assertEquals("{\n  \"error\": \"no such endpoint: GET /v1/nothing (see docs/control-plane.md: /v1/policies, " +
            "/v1/policies/{id}, /v1/policies/{id}/history, /v1/policies/{id}/rollback, /v1/policies/{id}/compare, " +
            "/v1/exemptions, /v1/exemptions/{id}, /v1/audit, /v1/members, /v1/members/{id}, /v1/decisions/rejected, " +
            "/v1/decisions/rejected/{id}, /v1/appeals, /v1/hot-keys, /v1/history)\"\n}\n", body(response));
        assertEquals(404, call(HttpMethod.GET, "/v1/policies/").status().code(), "an empty id is no id");
        assertEquals(404, call(HttpMethod.GET, "/v1").status().code());
    }

    @Test
    void shouldAnswerAWrongMethod405NamingTheMethodsThePathAllows()
    {
        final String[][] cases = {
            {"POST", "/v1/policies", "GET"},
            {"POST", "/v1/policies/orders", "GET, PUT, DELETE"},
            {"PUT", "/v1/policies/orders/history", "GET"},
            {"GET", "/v1/policies/orders/rollback", "POST"},
            {"DELETE", "/v1/exemptions", "GET"},
            {"GET", "/v1/exemptions/e1", "PUT, DELETE"},
            {"POST", "/v1/audit", "GET"},
            {"POST", "/v1/members", "GET"},
            {"GET", "/v1/members/n4", "PUT, DELETE"},
            {"HEAD", "/v1/hot-keys", "GET"},
            {"POST", "/v1/policies/orders/compare", "GET"}};
        for (final String[] c : cases)
        {
            final FullHttpResponse response = call(HttpMethod.valueOf(c[0]), c[1]);
            assertEquals(405, response.status().code(), c[0] + " " + c[1]);
            assertEquals(c[2], response.headers().get(HttpHeaderNames.ALLOW), c[0] + " " + c[1]);
            assertTrue(body(response).contains("method not allowed here; use " + c[2]), body(response));
        }
    }

    @Test
    void shouldAnswerTheReadRoutesOfASingleNode()
    {
        assertEquals(200, call(HttpMethod.GET, "/v1/policies").status().code());
        assertEquals(200, call(HttpMethod.GET, "/v1/exemptions").status().code());
        assertEquals(200, call(HttpMethod.GET, "/v1/audit?limit=5").status().code());
        assertEquals(200, call(HttpMethod.GET, "/v1/hot-keys").status().code());
        final FullHttpResponse policy = call(HttpMethod.GET, "/v1/policies/none");
        assertEquals(404, policy.status().code());
        assertTrue(body(policy).contains("no policy none in force"), body(policy));
        final FullHttpResponse history = call(HttpMethod.GET, "/v1/policies/none/history");
        assertEquals(404, history.status().code());
        assertTrue(body(history).contains("no policy none was ever created"), body(history));
    }

    @Test
    void shouldRefuseACompareOfAnUnknownPolicyOrOneWithoutShadowOrWithABadSince() throws Exception
    {
        final PolicySet.Builder set = PolicySet.newBuilder();
        JsonFormat.parser().merge("{\"version\":1,\"defaultPolicy\":{\"id\":\"default\",\"rate\":1,\"burst\":1," +
            "\"owner\":\"test\"}}", set);
        final PolicyState.Status applied = control.state().apply(PolicyState.command("test", 0).setBootstrap(set)
            .build()).status();
        assertEquals(PolicyState.Status.OK, applied);
        final FullHttpResponse unknown = call(HttpMethod.GET, "/v1/policies/none/compare");
        assertEquals(404, unknown.status().code());
        assertTrue(body(unknown).contains("no policy none was ever created"), body(unknown));
        final FullHttpResponse noShadow = call(HttpMethod.GET, "/v1/policies/default/compare?since=0");
        assertEquals(404, noShadow.status().code());
        assertTrue(body(noShadow).contains("policy default has no shadow version in force"), body(noShadow));
        for (final String since : new String[] {"1h", "-5", "99999999999999999999", "12.5"})
        {
            final FullHttpResponse bad = call(HttpMethod.GET, "/v1/policies/default/compare?since=" + since);
            assertEquals(400, bad.status().code(), since);
            assertTrue(body(bad).contains("since: must be a time in milliseconds since the epoch"), body(bad));
            assertTrue(body(bad).contains("was: " + since), body(bad));
        }
        final long future = System.currentTimeMillis() + 3_600_000L;
        final FullHttpResponse later = call(HttpMethod.GET, "/v1/policies/default/compare?since=" + future);
        assertEquals(400, later.status().code());
        assertTrue(body(later).contains("is in the future"), body(later));
    }

    @Test
    void shouldRefuseBeforeRoutingWithoutTheTokenOrWithABadActorOrQuery()
    {
        final FullHttpResponse noToken = call(HttpMethod.GET, "/v1/nothing", null, "alice");
        assertEquals(401, noToken.status().code());
        assertEquals("Bearer realm=\"limiter\"", noToken.headers().get(HttpHeaderNames.WWW_AUTHENTICATE));
        final FullHttpResponse badActor = call(HttpMethod.GET, "/v1/nothing", TOKEN, "x".repeat(129));
        assertEquals(400, badActor.status().code());
        assertTrue(body(badActor).contains("X-Limiter-Actor: at most 128 printable ASCII characters"), body(badActor));
        final FullHttpResponse badQuery = call(HttpMethod.GET, "/v1/nothing?reason=%zz");
        assertEquals(400, badQuery.status().code());
        assertTrue(body(badQuery).contains("malformed query string"), body(badQuery));
    }

    @Test
    void shouldAnswer400WhenABodyIsMissingOrNamesAnotherId()
    {
        final FullHttpResponse empty = call(HttpMethod.PUT, "/v1/policies/orders");
        assertEquals(400, empty.status().code());
        assertTrue(body(empty).contains("the request body must be a Policy as JSON; it was empty"), body(empty));
        final FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.PUT,
            "/v1/exemptions/e1", Unpooled.copiedBuffer("{\"id\":\"e2\"}", StandardCharsets.UTF_8));
        request.headers().set(HttpHeaderNames.AUTHORIZATION, "Bearer " + TOKEN);
        final List<FullHttpResponse> answers = new ArrayList<>();
        api.handle(request, "/v1/exemptions/e1", answers::add);
        assertEquals(400, answers.get(0).status().code());
        assertTrue(body(answers.get(0)).contains("the body\\u0027s id \\u0027e2\\u0027 differs from the path"),
            body(answers.get(0)));
    }

    @Test
    void shouldAnswerMembersOnASingleNodeAsMembershipRefusesThem()
    {
        final FullHttpResponse members = call(HttpMethod.GET, "/v1/members");
        assertTrue(members.status().code() >= 400, members.status().toString());
    }
}
