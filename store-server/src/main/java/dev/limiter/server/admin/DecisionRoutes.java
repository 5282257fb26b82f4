package dev.limiter.server.admin;

import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.policy.Appeal;
import dev.limiter.server.control.PolicyControl;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;

import java.util.function.Consumer;

/**
 * {@code /v1/decisions/rejected} and {@code /v1/appeals}: this node's sampled rejections, and the
 * appeals against false ones (replicated: any member lists them). Their JSON is {@link DecisionJson}'s.
 */
final class DecisionRoutes
{
    private static final int MAX_DECISIONS_PAGE = 4096;
    private static final int DEFAULT_PAGE = 100;

    private final PolicyControl control;
    private final RejectionSamples rejections;

    DecisionRoutes(final PolicyControl control, final RejectionSamples rejections)
    {
        this.control = control;
        this.rejections = rejections;
    }

    /** {@code GET /v1/decisions/rejected?limit=&policy=&tenant=}: newest first. */
    void rejected(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final int limit = call.number("limit", DEFAULT_PAGE, 1, MAX_DECISIONS_PAGE);
        reply.accept(AdminApi.rawJson(HttpResponseStatus.OK, DecisionJson.page(rejections,
            rejections.newest(limit, call.first("policy"), call.first("tenant")))));
    }

    /** {@code GET /v1/decisions/rejected/{id}}: 404 when this node never sampled it. */
    void rejectedOne(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final String problem = DecisionIds.problem(call.id());
        if (problem != null)
        {
            throw new BadRequest(problem);
        }
        final RejectionSamples.Rejection found = rejections.find(call.id());
        reply.accept(found != null ? AdminApi.rawJson(HttpResponseStatus.OK, DecisionJson.one(rejections, found)) :
            AdminApi.error(HttpResponseStatus.NOT_FOUND, "node " + rejections.node() + " never sampled decision " +
                call.id() + " (another member may have decided it, or it was sampled out or overwritten)"));
    }

    /** {@code POST /v1/appeals}: an Appeal body, a false rejection. */
    void appeal(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final Appeal.Builder appeal = Appeal.newBuilder();
        call.parse(appeal, "an Appeal ({\"decisionId\",\"owner\",\"reason\",\"policy\",\"version\"," +
            "\"tenant\",\"route\"})");
        // What the cluster sets is not the caller's to choose.
        AdminApi.submit(control, call.command().setAppeal(appeal.clearAt().clearActor()).build(), reply);
    }

    /** {@code GET /v1/appeals?since=MILLIS}: the appeals applied since then. */
    void appeals(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final long since = call.number("since", 0L, 0, Long.MAX_VALUE);
        reply.accept(AdminApi.rawJson(HttpResponseStatus.OK, DecisionJson.appeals(control.state().appeals(since))));
    }
}
