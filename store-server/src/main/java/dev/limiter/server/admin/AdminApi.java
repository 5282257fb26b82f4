package dev.limiter.server.admin;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.raft.NotLeaderException;
import dev.limiter.server.cluster.Membership;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * The control-plane routes of the admin port, JSON in and out (protobuf's JSON mapping of the
 * messages in {@code policy.proto}):
 *
 * <pre>
 * GET    /v1/policies                      PolicySet in force
 * GET    /v1/policies/{id}                 Policy (version in force)
 * GET    /v1/policies/{id}/history         PolicyHistory
 * GET    /v1/policies/{id}/compare?since=MILLIS  its shadow version's predictions against what was enforced here
 * PUT    /v1/policies/{id}                 Policy body; a new version          -> ChangeResult
 * POST   /v1/policies/{id}/rollback        RollbackRequest body                -> ChangeResult
 * DELETE /v1/policies/{id}?reason=...      a deletion (tombstone version)      -> ChangeResult
 * GET    /v1/audit?since=&policy=&owner=&limit=                               -> AuditPage
 * GET    /v1/exemptions                    ExemptionList (active)
 * PUT    /v1/exemptions/{id}               Exemption body                      -> ChangeResult
 * DELETE /v1/exemptions/{id}?reason=...    end it before its expiry            -> ChangeResult
 * GET    /v1/hot-keys                      HotKeyReport: this node's busiest bucket keys per shard
 * GET    /v1/history?since=MILLIS          this node's bounded history after since (NodeHistory's JSON)
 * GET    /v1/members                       MemberList: the members in force and the leader
 * PUT    /v1/members/{id}?reason=...       Member body ({"address":"HOST:PORT"}): add a member -> MemberList
 * DELETE /v1/members/{id}?reason=...       remove a member                     -> MemberList
 * GET    /v1/decisions/rejected?limit=&policy=&tenant=   this node's sampled rejections, newest first
 * GET    /v1/decisions/rejected/{id}       one of them (404: this node never sampled it)
 * POST   /v1/appeals                       Appeal body: a false rejection      -> ChangeResult
 * GET    /v1/appeals?since=MILLIS          the appeals applied since then (any member)
 * </pre>
 * The decision and appeal lists are JSON written by {@link DecisionJson} (times and counts as numbers).
 * <p>
 * Each resource's handlers are a class of their own ({@link PolicyRoutes}, {@link ExemptionRoutes},
 * {@link AuditRoutes}, {@link MemberRoutes}, {@link DecisionRoutes}, and {@link NodeReportRoutes} for what
 * this node alone saw); this class checks the token and the actor, routes, and answers errors and JSON
 * alike for all of them.
 * <p>
 * Every route needs {@code Authorization: Bearer <token>}; {@code X-Limiter-Actor} names who acts.
 * Errors are an AdminError: 400 invalid (nothing changed), 401 no or wrong token, 404 unknown,
 * 409 a PUT whose {@code version} is not the policy's newest (changed since it was read),
 * 421 a change sent to a follower (its {@code leader} says where to go), 503 not committed.
 * The routes are a {@link RouteTable}: a path none of them knows is answered 404 listing them, a
 * method a known path does not serve 405 with the methods it does ({@code Allow}).
 */
final class AdminApi
{
    static final String ACTOR_HEADER = "X-Limiter-Actor";
    private static final String JSON_TYPE = "application/json";
    private static final int MAX_ACTOR_LENGTH = 128;

    private final String token;
    private final RouteTable<RouteHandler> routes;

    AdminApi(final PolicyControl control, final String token, final Supplier<HotKeyReport> hotKeys,
        final BiFunction<String, Long, CompletableFuture<NodeStatus.Answer>> compares, final Membership membership,
        final RejectionSamples rejections, final LongFunction<String> history)
    {
        this.token = token;
        final PolicyRoutes policies = new PolicyRoutes(control);
        final ExemptionRoutes exemptions = new ExemptionRoutes(control);
        final AuditRoutes audit = new AuditRoutes(control);
        final MemberRoutes members = new MemberRoutes(membership);
        final DecisionRoutes decisions = new DecisionRoutes(control, rejections);
        // This node's shards only: each node decides (and samples) what its callers send it.
        final NodeReportRoutes node = new NodeReportRoutes(hotKeys, compares, history);
        // In this order an unknown path is told the patterns, and a wrong method the methods a path allows.
        this.routes = new RouteTable<RouteHandler>()
            .add(HttpMethod.GET, "/v1/policies", policies::list)
            .add(HttpMethod.GET, "/v1/policies/{id}", policies::one)
            .add(HttpMethod.PUT, "/v1/policies/{id}", policies::put)
            .add(HttpMethod.DELETE, "/v1/policies/{id}", policies::delete)
            .add(HttpMethod.GET, "/v1/policies/{id}/history", policies::history)
            .add(HttpMethod.POST, "/v1/policies/{id}/rollback", policies::rollback)
            .add(HttpMethod.GET, "/v1/policies/{id}/compare", node::compare)
            .add(HttpMethod.GET, "/v1/exemptions", exemptions::list)
            .add(HttpMethod.PUT, "/v1/exemptions/{id}", exemptions::put)
            .add(HttpMethod.DELETE, "/v1/exemptions/{id}", exemptions::delete)
            .add(HttpMethod.GET, "/v1/audit", audit::page)
            .add(HttpMethod.GET, "/v1/members", members::list)
            .add(HttpMethod.PUT, "/v1/members/{id}", members::add)
            .add(HttpMethod.DELETE, "/v1/members/{id}", members::remove)
            .add(HttpMethod.GET, "/v1/decisions/rejected", decisions::rejected)
            .add(HttpMethod.GET, "/v1/decisions/rejected/{id}", decisions::rejectedOne)
            .add(HttpMethod.POST, "/v1/appeals", decisions::appeal)
            .add(HttpMethod.GET, "/v1/appeals", decisions::appeals)
            .add(HttpMethod.GET, "/v1/hot-keys", node::hotKeys)
            .add(HttpMethod.GET, "/v1/history", node::history);
    }

    /** Answers the request through {@code reply}, at once or when a change has committed. */
    void handle(final FullHttpRequest request, final String path, final Consumer<FullHttpResponse> reply)
    {
        if (!AdminToken.accepts(token, request.headers().get(HttpHeaderNames.AUTHORIZATION)))
        {
            final FullHttpResponse refused = error(HttpResponseStatus.UNAUTHORIZED,
                "missing or wrong bearer token: send 'Authorization: Bearer <token>' (./limiter takes --token, " +
                    "LIMITER_ADMIN_TOKEN or data/admin-token); nothing was changed");
            refused.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"limiter\"");
            reply.accept(refused);
            return;
        }
        try
        {
            route(request, path, reply);
        }
        catch (final BadRequest e)
        {
            reply.accept(error(HttpResponseStatus.BAD_REQUEST, e.getMessage()));
        }
        catch (final Membership.Refused e)
        {
            reply.accept(error(HttpResponseStatus.valueOf(e.status), e.getMessage()));
        }
    }

    private void route(final FullHttpRequest request, final String path, final Consumer<FullHttpResponse> reply)
    {
        final QueryStringDecoder query = new QueryStringDecoder(request.uri());
        try
        {
            query.parameters(); // decoded now, so that a bad escape is the caller's 400, not a failure halfway through
        }
        catch (final IllegalArgumentException e)
        {
            throw new BadRequest("malformed query string: " + e.getMessage() + " (escape '%' as %25); nothing changed");
        }
        final String actor = actor(request);
        final RouteTable.Match<RouteHandler> match = routes.match(request.method(), path);
        if (match.handler() != null)
        {
            match.handler().handle(new AdminCall(request, match.param("id"), query, actor), reply);
        }
        else if (match.allow() != null)
        {
            final FullHttpResponse response = error(HttpResponseStatus.METHOD_NOT_ALLOWED,
                "method not allowed here; use " + match.allow());
            response.headers().set(HttpHeaderNames.ALLOW, match.allow());
            reply.accept(response);
        }
        else
        {
            reply.accept(error(HttpResponseStatus.NOT_FOUND, "no such endpoint: " + request.method() + " " + path +
                " (see docs/control-plane.md: " + String.join(", ", routes.patterns()) + ")"));
        }
    }

    /** Who acts: {@code X-Limiter-Actor}, trimmed, or "unknown" without one. */
    private static String actor(final FullHttpRequest request)
    {
        final String actor = request.headers().get(ACTOR_HEADER);
        if (actor == null || actor.isBlank())
        {
            return "unknown";
        }
        final String trimmed = actor.strip();
        if (trimmed.length() > MAX_ACTOR_LENGTH || !trimmed.chars().allMatch(c -> c >= 0x20 && c < 0x7F))
        {
            throw new BadRequest(ACTOR_HEADER + ": at most " + MAX_ACTOR_LENGTH + " printable ASCII characters");
        }
        return trimmed;
    }

    /** Submits a control-plane change, and answers with its outcome once committed (or why it was not). */
    static void submit(final PolicyControl control, final PolicyCommand command,
        final Consumer<FullHttpResponse> reply)
    {
        control.submit(command).whenComplete((outcome, failure) ->
            reply.accept(failure == null ? outcome(outcome) : failed(failure)));
    }

    /** A change's outcome as applied: its ChangeResult, or the AdminError of why nothing changed. */
    private static FullHttpResponse outcome(final PolicyState.Outcome outcome)
    {
        return switch (outcome.status())
        {
            case OK, IGNORED -> json(HttpResponseStatus.OK, outcome.result());
            case NOT_FOUND -> json(HttpResponseStatus.NOT_FOUND, outcome.error());
            case INVALID -> json(HttpResponseStatus.BAD_REQUEST, outcome.error());
            case CONFLICT -> json(HttpResponseStatus.CONFLICT, outcome.error());
        };
    }

    /** A change that did not commit: 421 naming the leader, a membership refusal's status, else 503. */
    static FullHttpResponse failed(final Throwable failure)
    {
        final Throwable cause = failure instanceof CompletionException && failure.getCause() != null ?
            failure.getCause() : failure;
        if (cause instanceof NotLeaderException notLeader)
        {
            final String leader = notLeader.leaderHint();
            return json(HttpResponseStatus.MISDIRECTED_REQUEST, AdminError.newBuilder()
                .setError("this node is not the leader; send changes to " +
                    (leader == null ? "the leader (none known yet; retry)" : leader) + "; nothing was changed")
                .setLeader(leader == null ? "" : leader).build());
        }
        if (cause instanceof Membership.Refused refused)
        {
            return error(HttpResponseStatus.valueOf(refused.status), refused.getMessage());
        }
        return error(HttpResponseStatus.SERVICE_UNAVAILABLE, "the change was not committed (" + cause.getMessage() +
            "); check ./limiter status and retry");
    }

    static FullHttpResponse error(final HttpResponseStatus status, final String message)
    {
        return json(status, AdminError.newBuilder().setError(message).build());
    }

    /** A message in protobuf's JSON mapping, and a newline. */
    static FullHttpResponse json(final HttpResponseStatus status, final Message message)
    {
        final String body;
        try
        {
            body = JsonFormat.printer().print(message) + "\n";
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalStateException(e);
        }
        return rawJson(status, body);
    }

    /** A JSON document already written. */
    static FullHttpResponse rawJson(final HttpResponseStatus status, final String body)
    {
        final ByteBuf content = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, content);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, JSON_TYPE);
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
        return response;
    }
}
