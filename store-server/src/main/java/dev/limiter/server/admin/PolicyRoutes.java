package dev.limiter.server.admin;

import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.RollbackCommand;
import dev.limiter.protocol.policy.RollbackRequest;
import dev.limiter.server.control.PolicyControl;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;

import java.util.function.Consumer;

/**
 * {@code /v1/policies}: the policy set in force, one policy, its history, and its changes (a new
 * version, a rollback, a deletion), each answered once committed.
 */
final class PolicyRoutes
{
    private final PolicyControl control;

    PolicyRoutes(final PolicyControl control)
    {
        this.control = control;
    }

    /** {@code GET /v1/policies}: the PolicySet in force. */
    void list(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        reply.accept(AdminApi.json(HttpResponseStatus.OK, control.state().inForce()));
    }

    /** {@code GET /v1/policies/{id}}: the version in force. */
    void one(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final Policy current = control.state().current(call.id());
        reply.accept(current == null ?
            AdminApi.error(HttpResponseStatus.NOT_FOUND,
                "no policy " + call.id() + " in force (see GET /v1/policies)") :
            AdminApi.json(HttpResponseStatus.OK, current));
    }

    /** {@code PUT /v1/policies/{id}}: a new version, on top of the one the body says its author read. */
    void put(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final Policy.Builder policy = Policy.newBuilder();
        call.parse(policy, "a Policy");
        call.requireSameId(policy.getId());
        // A body's version is the one its author read: the change applies only on top of it.
        final long expected = policy.getVersion();
        AdminApi.submit(control, call.command().setExpectedVersion(expected)
            .setPut(policy.setId(call.id()).setVersion(0)).build(), reply);
    }

    /** {@code DELETE /v1/policies/{id}?reason=...}: a tombstone version. */
    void delete(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        AdminApi.submit(control, call.command()
            .setDelete(DeleteCommand.newBuilder().setId(call.id()).setReason(call.reason())).build(), reply);
    }

    /** {@code GET /v1/policies/{id}/history}: every version it had. */
    void history(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final PolicyHistory history = control.state().history(call.id());
        reply.accept(history == null ?
            AdminApi.error(HttpResponseStatus.NOT_FOUND, "no policy " + call.id() + " was ever created") :
            AdminApi.json(HttpResponseStatus.OK, history));
    }

    /** {@code POST /v1/policies/{id}/rollback}: an earlier version in force again. */
    void rollback(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final RollbackRequest.Builder body = RollbackRequest.newBuilder();
        call.parse(body, "a RollbackRequest ({\"toVersion\":N,\"reason\":\"...\"})");
        AdminApi.submit(control, call.command().setRollback(RollbackCommand.newBuilder()
            .setId(call.id()).setToVersion(body.getToVersion()).setReason(body.getReason())).build(), reply);
    }
}
