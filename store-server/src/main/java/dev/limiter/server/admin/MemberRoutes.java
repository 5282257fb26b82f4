package dev.limiter.server.admin;

import com.google.protobuf.Message;
import dev.limiter.protocol.policy.Member;
import dev.limiter.server.cluster.Membership;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;

import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * {@code /v1/members}: the members in force and the leader, one added, one removed, each change
 * answered once Raft has made it. What {@link Membership} refuses is answered with its status.
 */
final class MemberRoutes
{
    private final Membership membership;

    MemberRoutes(final Membership membership)
    {
        this.membership = membership;
    }

    /** {@code GET /v1/members}: the MemberList. */
    void list(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        reply.accept(AdminApi.json(HttpResponseStatus.OK, membership.list()));
    }

    /** {@code PUT /v1/members/{id}?reason=...}: a Member body ({"address":"HOST:PORT"}). */
    void add(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final Member.Builder member = Member.newBuilder();
        call.parse(member, "a Member ({\"address\":\"HOST:PORT\"})");
        call.requireSameId(member.getId());
        answer(membership.add(call.actor(), call.id(), member.getAddress(), call.first("reason")), reply);
    }

    /** {@code DELETE /v1/members/{id}?reason=...}. */
    void remove(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        answer(membership.remove(call.actor(), call.id(), call.first("reason")), reply);
    }

    private static void answer(final CompletableFuture<? extends Message> change,
        final Consumer<FullHttpResponse> reply)
    {
        change.whenComplete((result, failure) -> reply.accept(failure == null ?
            AdminApi.json(HttpResponseStatus.OK, result) : AdminApi.failed(failure)));
    }
}
