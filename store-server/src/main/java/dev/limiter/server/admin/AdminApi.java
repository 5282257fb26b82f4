package dev.limiter.server.admin;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Timestamp;
import com.google.protobuf.util.JsonFormat;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.JsonHints;
import dev.limiter.protocol.policy.AdminError;
import dev.limiter.protocol.policy.Appeal;
import dev.limiter.protocol.policy.AuditPage;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.ExemptionList;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.protocol.policy.Member;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.RemoveExemption;
import dev.limiter.protocol.policy.RollbackCommand;
import dev.limiter.protocol.policy.RollbackRequest;
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
import java.text.ParseException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import java.util.function.Predicate;
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
 *
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
    private static final int MAX_AUDIT_PAGE = 10_000;
    private static final int MAX_DECISIONS_PAGE = 4096;

    private final PolicyControl control;
    private final String token;
    private final Supplier<HotKeyReport> hotKeys;
    private final BiFunction<String, Long, CompletableFuture<NodeStatus.Answer>> compares;
    private final Membership membership;
    private final RejectionSamples rejections;
    private final LongFunction<String> history;
    private final RouteTable<Handler> routes;

    /** Answers one request, through {@code reply}. */
    @FunctionalInterface
    private interface Handler
    {
        void handle(Call call, Consumer<FullHttpResponse> reply);
    }

    /**
     * A request a route answers: the request, the path's {@code {id}}, its query (already decoded)
     * and who acts.
     */
    private record Call(FullHttpRequest request, String id, QueryStringDecoder query, String actor)
    {
    }

    AdminApi(final PolicyControl control, final String token, final Supplier<HotKeyReport> hotKeys,
        final BiFunction<String, Long, CompletableFuture<NodeStatus.Answer>> compares, final Membership membership,
        final RejectionSamples rejections, final LongFunction<String> history)
    {
        this.history = history;
        this.compares = compares;
        this.membership = membership;
        this.rejections = rejections;
        this.control = control;
        this.token = token;
        this.hotKeys = hotKeys;
        // In this order an unknown path is told the patterns, and a wrong method the methods a path allows.
        this.routes = new RouteTable<Handler>()
            .add(HttpMethod.GET, "/v1/policies", this::policies)
            .add(HttpMethod.GET, "/v1/policies/{id}", this::policy)
            .add(HttpMethod.PUT, "/v1/policies/{id}", this::putPolicy)
            .add(HttpMethod.DELETE, "/v1/policies/{id}", this::deletePolicy)
            .add(HttpMethod.GET, "/v1/policies/{id}/history", this::history)
            .add(HttpMethod.POST, "/v1/policies/{id}/rollback", this::rollback)
            .add(HttpMethod.GET, "/v1/policies/{id}/compare", this::compare)
            .add(HttpMethod.GET, "/v1/exemptions", this::exemptions)
            .add(HttpMethod.PUT, "/v1/exemptions/{id}", this::putExemption)
            .add(HttpMethod.DELETE, "/v1/exemptions/{id}", this::deleteExemption)
            .add(HttpMethod.GET, "/v1/audit", this::audit)
            .add(HttpMethod.GET, "/v1/members", this::members)
            .add(HttpMethod.PUT, "/v1/members/{id}", this::addMember)
            .add(HttpMethod.DELETE, "/v1/members/{id}", this::removeMember)
            .add(HttpMethod.GET, "/v1/decisions/rejected", this::rejectedDecisions)
            .add(HttpMethod.GET, "/v1/decisions/rejected/{id}", this::rejectedDecision)
            .add(HttpMethod.POST, "/v1/appeals", this::appeal)
            .add(HttpMethod.GET, "/v1/appeals", this::appeals)
            // This node's shards only: each node decides (and samples) what its callers send it.
            .add(HttpMethod.GET, "/v1/hot-keys", (call, reply) -> reply.accept(json(HttpResponseStatus.OK,
                hotKeys.get())))
            .add(HttpMethod.GET, "/v1/history", this::nodeHistory);
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
        final RouteTable.Match<Handler> match = routes.match(request.method(), path);
        if (match.handler() != null)
        {
            match.handler().handle(new Call(request, match.param("id"), query, actor), reply);
        }
        else if (match.allow() != null)
        {
            reply.accept(methodNotAllowed(match.allow()));
        }
        else
        {
            reply.accept(error(HttpResponseStatus.NOT_FOUND, "no such endpoint: " + request.method() + " " + path +
                " (see docs/control-plane.md: " + String.join(", ", routes.patterns()) + ")"));
        }
    }

    private void policies(final Call call, final Consumer<FullHttpResponse> reply)
    {
        reply.accept(json(HttpResponseStatus.OK, control.state().inForce()));
    }

    private void policy(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final Policy current = control.state().current(call.id());
        reply.accept(current == null ?
            error(HttpResponseStatus.NOT_FOUND, "no policy " + call.id() + " in force (see GET /v1/policies)") :
            json(HttpResponseStatus.OK, current));
    }

    private void putPolicy(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final Policy.Builder policy = Policy.newBuilder();
        parse(call.request(), policy, "a Policy");
        requireSameId(policy.getId(), call.id());
        // A body's version is the one its author read: the change applies only on top of it.
        final long expected = policy.getVersion();
        submit(PolicyState.command(call.actor(), System.currentTimeMillis()).setExpectedVersion(expected)
            .setPut(policy.setId(call.id()).setVersion(0)).build(), reply);
    }

    private void deletePolicy(final Call call, final Consumer<FullHttpResponse> reply)
    {
        submit(PolicyState.command(call.actor(), System.currentTimeMillis())
            .setDelete(DeleteCommand.newBuilder().setId(call.id()).setReason(reason(call))).build(), reply);
    }

    private void history(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final PolicyHistory history = control.state().history(call.id());
        reply.accept(history == null ?
            error(HttpResponseStatus.NOT_FOUND, "no policy " + call.id() + " was ever created") :
            json(HttpResponseStatus.OK, history));
    }

    private void rollback(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final RollbackRequest.Builder body = RollbackRequest.newBuilder();
        parse(call.request(), body, "a RollbackRequest ({\"toVersion\":N,\"reason\":\"...\"})");
        submit(PolicyState.command(call.actor(), System.currentTimeMillis()).setRollback(RollbackCommand.newBuilder()
            .setId(call.id()).setToVersion(body.getToVersion()).setReason(body.getReason())).build(), reply);
    }

    /** This node's shards only, like the hot keys: each node compares the decisions it made. */
    private void compare(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final String sinceText = first(call.query(), "since");
        final long now = System.currentTimeMillis();
        long since = 0;
        if (sinceText != null)
        {
            try
            {
                since = Long.parseLong(sinceText);
            }
            catch (final NumberFormatException e)
            {
                since = -1;
            }
            if (since < 0)
            {
                throw new BadRequest("since: must be a time in milliseconds since the epoch (e.g. " + (now - 3_600_000L) +
                    " for an hour ago), was: " + sinceText);
            }
            if (since > now + 60_000L)
            {
                throw new BadRequest("since: " + since + " is in the future (this node's time is " + now + ")");
            }
        }
        compares.apply(call.id(), since).whenComplete((answer, failure) -> reply.accept(
            failure != null ? error(HttpResponseStatus.INTERNAL_SERVER_ERROR, "could not read the shards' comparisons: " +
                failure) :
            answer.status() == 200 ? rawJson(answer.body()) : error(HttpResponseStatus.valueOf(answer.status()), answer.body())));
    }

    private static FullHttpResponse rawJson(final String body)
    {
        final ByteBuf content = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, content);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, JSON_TYPE);
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
        return response;
    }

    private void exemptions(final Call call, final Consumer<FullHttpResponse> reply)
    {
        reply.accept(json(HttpResponseStatus.OK,
            ExemptionList.newBuilder().addAllExemptions(control.state().exemptions()).build()));
    }

    private void putExemption(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final Exemption.Builder exemption = Exemption.newBuilder();
        parse(call.request(), exemption, "an Exemption");
        requireSameId(exemption.getId(), call.id());
        // What the cluster sets is not the caller's to choose.
        exemption.setId(call.id()).clearCreatedAt().clearActor().clearBypassed();
        submit(PolicyState.command(call.actor(), System.currentTimeMillis()).setExempt(exemption).build(), reply);
    }

    private void deleteExemption(final Call call, final Consumer<FullHttpResponse> reply)
    {
        submit(PolicyState.command(call.actor(), System.currentTimeMillis()).setUnexempt(
            RemoveExemption.newBuilder().setId(call.id()).setReason(reason(call))).build(), reply);
    }

    private void audit(final Call call, final Consumer<FullHttpResponse> reply)
    {
        reply.accept(json(HttpResponseStatus.OK, AuditPage.newBuilder().addAllRecords(audit(call.query())).build()));
    }

    private void nodeHistory(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final String since = first(call.query(), "since");
        long sinceMillis = 0;
        if (since != null)
        {
            try
            {
                sinceMillis = Long.parseLong(since);
            }
            catch (final NumberFormatException e)
            {
                sinceMillis = -1;
            }
            if (sinceMillis < 0)
            {
                throw new BadRequest("since: must be milliseconds since the epoch (0 or more), was '" + since + "'");
            }
        }
        final String body = history.apply(sinceMillis);
        reply.accept(body == null ? error(HttpResponseStatus.NOT_FOUND, "this node keeps no history") :
            rawJson(HttpResponseStatus.OK, body));
    }

    private void members(final Call call, final Consumer<FullHttpResponse> reply)
    {
        reply.accept(json(HttpResponseStatus.OK, membership.list()));
    }

    private void addMember(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final Member.Builder member = Member.newBuilder();
        parse(call.request(), member, "a Member ({\"address\":\"HOST:PORT\"})");
        requireSameId(member.getId(), call.id());
        answer(membership.add(call.actor(), call.id(), member.getAddress(), first(call.query(), "reason")), reply);
    }

    private void removeMember(final Call call, final Consumer<FullHttpResponse> reply)
    {
        answer(membership.remove(call.actor(), call.id(), first(call.query(), "reason")), reply);
    }

    private void rejectedDecisions(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final int limit = number(call.query(), "limit", 100, 1, MAX_DECISIONS_PAGE);
        reply.accept(raw(HttpResponseStatus.OK, DecisionJson.page(rejections,
            rejections.newest(limit, first(call.query(), "policy"), first(call.query(), "tenant")))));
    }

    private void rejectedDecision(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final String problem = DecisionIds.problem(call.id());
        if (problem != null)
        {
            throw new BadRequest(problem);
        }
        final RejectionSamples.Rejection found = rejections.find(call.id());
        reply.accept(found != null ? raw(HttpResponseStatus.OK, DecisionJson.one(rejections, found)) :
            error(HttpResponseStatus.NOT_FOUND, "node " + rejections.node() + " never sampled decision " + call.id() +
                " (another member may have decided it, or it was sampled out or overwritten)"));
    }

    private void appeal(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final Appeal.Builder appeal = Appeal.newBuilder();
        parse(call.request(), appeal, "an Appeal ({\"decisionId\",\"owner\",\"reason\",\"policy\",\"version\"," +
            "\"tenant\",\"route\"})");
        // What the cluster sets is not the caller's to choose.
        submit(PolicyState.command(call.actor(), System.currentTimeMillis()).setAppeal(appeal.clearAt().clearActor()).build(),
            reply);
    }

    private void appeals(final Call call, final Consumer<FullHttpResponse> reply)
    {
        final long since = number(call.query(), "since", 0, 0, Long.MAX_VALUE);
        reply.accept(raw(HttpResponseStatus.OK, DecisionJson.appeals(control.state().appeals(since))));
    }

    /** A whole-number query parameter from {@code min} to {@code max}; {@code absent} when not given. */
    private static int number(final QueryStringDecoder query, final String name, final int absent, final int min,
        final int max)
    {
        return (int)number(query, name, (long)absent, min, (long)max);
    }

    private static long number(final QueryStringDecoder query, final String name, final long absent, final long min,
        final long max)
    {
        final String text = first(query, name);
        if (text == null)
        {
            return absent;
        }
        try
        {
            final long value = Long.parseLong(text);
            if (value >= min && value <= max)
            {
                return value;
            }
        }
        catch (final NumberFormatException e)
        {
            // told below
        }
        throw new BadRequest(name + ": must be a whole number from " + min + " to " + max + ", was '" + text + "'");
    }

    private static FullHttpResponse raw(final HttpResponseStatus status, final String json)
    {
        final ByteBuf content = Unpooled.copiedBuffer(json, StandardCharsets.UTF_8);
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, content);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, JSON_TYPE);
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
        return response;
    }

    /** A body may leave its id out; one that names another than the path's is refused. */
    private static void requireSameId(final String bodyId, final String pathId)
    {
        if (!bodyId.isEmpty() && !bodyId.equals(pathId))
        {
            throw new BadRequest("the body's id '" + bodyId + "' differs from the path's '" + pathId +
                "'; nothing changed");
        }
    }

    /** The query's reason, or "" without one. */
    private static String reason(final Call call)
    {
        final String reason = first(call.query(), "reason");
        return reason == null ? "" : reason;
    }

    private void submit(final PolicyCommand command, final Consumer<FullHttpResponse> reply)
    {
        control.submit(command).whenComplete((outcome, failure) ->
        {
            if (failure == null)
            {
                reply.accept(switch (outcome.status())
                {
                    case OK, IGNORED -> json(HttpResponseStatus.OK, outcome.result());
                    case NOT_FOUND -> json(HttpResponseStatus.NOT_FOUND, outcome.error());
                    case INVALID -> json(HttpResponseStatus.BAD_REQUEST, outcome.error());
                    case CONFLICT -> json(HttpResponseStatus.CONFLICT, outcome.error());
                });
                return;
            }
            reply.accept(failed(failure));
        });
    }

    /** Answers with a membership change's result once Raft has made it. */
    private static void answer(final CompletableFuture<? extends Message> change, final Consumer<FullHttpResponse> reply)
    {
        change.whenComplete((result, failure) -> reply.accept(failure == null ? json(HttpResponseStatus.OK, result) : failed(failure)));
    }

    private static FullHttpResponse failed(final Throwable failure)
    {
        final Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        if (cause instanceof NotLeaderException notLeader)
        {
            final String leader = notLeader.leaderHint();
            return json(HttpResponseStatus.MISDIRECTED_REQUEST, AdminError.newBuilder()
                .setError("this node is not the leader; send changes to " + (leader == null ? "the leader (none known yet; retry)" : leader) +
                    "; nothing was changed")
                .setLeader(leader == null ? "" : leader).build());
        }
        if (cause instanceof Membership.Refused refused)
        {
            return error(HttpResponseStatus.valueOf(refused.status), refused.getMessage());
        }
        return error(HttpResponseStatus.SERVICE_UNAVAILABLE, "the change was not committed (" + cause.getMessage() +
            "); check ./limiter status and retry");
    }

    private List<AuditRecord> audit(final QueryStringDecoder query)
    {
        final String since = first(query, "since");
        final String policy = first(query, "policy");
        final String owner = first(query, "owner");
        final String limitText = first(query, "limit");
        Predicate<AuditRecord> filter = record -> true;
        if (since != null)
        {
            final Timestamp from;
            try
            {
                from = Timestamps.parse(since);
            }
            catch (final ParseException e)
            {
                throw new BadRequest("since: '" + since + "' is not an RFC 3339 time such as 2026-12-03T09:00:00Z");
            }
            filter = filter.and(record -> Timestamps.compare(record.getAt(), from) >= 0);
        }
        if (policy != null)
        {
            filter = filter.and(record -> record.getPolicyId().equals(policy));
        }
        if (owner != null)
        {
            filter = filter.and(record -> record.getOwner().equals(owner));
        }
        int limit = 1000;
        if (limitText != null)
        {
            try
            {
                limit = Integer.parseInt(limitText);
            }
            catch (final NumberFormatException e)
            {
                limit = -1;
            }
            if (limit < 1 || limit > MAX_AUDIT_PAGE)
            {
                throw new BadRequest("limit: must be a number from 1 to " + MAX_AUDIT_PAGE + ", was '" + limitText + "'");
            }
        }
        return control.state().audit(filter, limit);
    }

    private static String actor(final FullHttpRequest request)
    {
        final String actor = request.headers().get(ACTOR_HEADER);
        if (actor == null || actor.isBlank())
        {
            return "unknown";
        }
        final String trimmed = actor.strip();
        if (trimmed.length() > 128 || !trimmed.chars().allMatch(c -> c >= 0x20 && c < 0x7F))
        {
            throw new BadRequest(ACTOR_HEADER + ": at most 128 printable ASCII characters");
        }
        return trimmed;
    }

    private static void parse(final FullHttpRequest request, final Message.Builder into, final String what)
    {
        final String body = request.content().toString(StandardCharsets.UTF_8);
        if (body.isBlank())
        {
            throw new BadRequest("the request body must be " + what + " as JSON; it was empty; nothing changed");
        }
        try
        {
            JsonFormat.parser().merge(body, into);
        }
        catch (final InvalidProtocolBufferException | RuntimeException e)
        {
            throw new BadRequest("the request body is not " + what + ": " + JsonHints.explain(e.getMessage()) + "; nothing changed");
        }
    }

    private static String first(final QueryStringDecoder query, final String name)
    {
        final List<String> values = query.parameters().get(name);
        return values == null || values.isEmpty() || values.get(0).isEmpty() ? null : values.get(0);
    }

    private static FullHttpResponse methodNotAllowed(final String allow)
    {
        final FullHttpResponse response = error(HttpResponseStatus.METHOD_NOT_ALLOWED, "method not allowed here; use " + allow);
        response.headers().set(HttpHeaderNames.ALLOW, allow);
        return response;
    }

    static FullHttpResponse error(final HttpResponseStatus status, final String message)
    {
        return json(status, AdminError.newBuilder().setError(message).build());
    }

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
    private static FullHttpResponse rawJson(final HttpResponseStatus status, final String body)
    {
        final ByteBuf content = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, content);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, JSON_TYPE);
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
        return response;
    }

    /** A request the API cannot act on: answered 400 with this message. */
    private static final class BadRequest extends RuntimeException
    {
        BadRequest(final String message)
        {
            super(message, null, false, false);
        }
    }
}
