package dev.limiter.server.admin;

import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.ExemptionList;
import dev.limiter.protocol.policy.RemoveExemption;
import dev.limiter.server.control.PolicyControl;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;

import java.util.function.Consumer;

/** {@code /v1/exemptions}: the active exemptions, one granted, one ended before its expiry. */
final class ExemptionRoutes
{
    private final PolicyControl control;

    ExemptionRoutes(final PolicyControl control)
    {
        this.control = control;
    }

    /** {@code GET /v1/exemptions}: the ExemptionList of active ones. */
    void list(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        reply.accept(AdminApi.json(HttpResponseStatus.OK,
            ExemptionList.newBuilder().addAllExemptions(control.state().exemptions()).build()));
    }

    /** {@code PUT /v1/exemptions/{id}}: an Exemption body. */
    void put(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final Exemption.Builder exemption = Exemption.newBuilder();
        call.parse(exemption, "an Exemption");
        call.requireSameId(exemption.getId());
        // What the cluster sets is not the caller's to choose.
        exemption.setId(call.id()).clearCreatedAt().clearActor().clearBypassed();
        AdminApi.submit(control, call.command().setExempt(exemption).build(), reply);
    }

    /** {@code DELETE /v1/exemptions/{id}?reason=...}. */
    void delete(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        AdminApi.submit(control, call.command().setUnexempt(
            RemoveExemption.newBuilder().setId(call.id()).setReason(call.reason())).build(), reply);
    }
}
