package dev.limiter.envoy.api;

import io.grpc.BindableService;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code limiter.v1.RateLimiter} over gRPC: each method hands its request to {@link DecisionApi}
 * and answers from the SDK's thread; a problem becomes the call's status (INVALID_ARGUMENT naming
 * the field, UNAVAILABLE when the store gave no decision).
 */
final class ApiGrpcService implements BindableService
{
    /** Kept back from the caller's gRPC deadline so that the answer can still reach it. */
    private static final long ANSWER_SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final DecisionApi api;

    ApiGrpcService(final DecisionApi api)
    {
        this.api = api;
    }

    @Override
    public ServerServiceDefinition bindService()
    {
        return ServerServiceDefinition.builder(RateLimiterMethods.SERVICE)
            .addMethod(RateLimiterMethods.ACQUIRE, ServerCalls.asyncUnaryCall((q, a) -> answer(a, () -> api.acquire(q,
                callerNanos(), BearerTokens.GRANT.get()).thenApply(DecisionApi.Answered::response))))
            .addMethod(RateLimiterMethods.ACQUIRE_BATCH,
                ServerCalls.asyncUnaryCall((q, a) -> answer(a, () -> api.acquireBatch(q, callerNanos(),
                    BearerTokens.GRANT.get()))))
            .addMethod(RateLimiterMethods.ACQUIRE_LEASE,
                ServerCalls.asyncUnaryCall((q, a) -> answer(a, () -> api.acquire(q,
                    callerNanos(), BearerTokens.GRANT.get()).thenApply(DecisionApi.Answered::response))))
            .addMethod(RateLimiterMethods.RELEASE, ServerCalls.asyncUnaryCall((q, a) -> answer(a,
                () -> api.release(q))))
            .build();
    }

    /** The time the caller's gRPC deadline leaves for the store, or -1 when it set none. */
    private static long callerNanos()
    {
        final Deadline deadline = Context.current().getDeadline();
        return deadline == null ? -1 : Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS) - ANSWER_SLACK_NANOS);
    }

    private static <A> void answer(final StreamObserver<A> answers,
        final java.util.function.Supplier<CompletableFuture<A>> call)
    {
        call.get().whenComplete((answer, error) ->
        {
            if (error == null)
            {
                answers.onNext(answer);
                answers.onCompleted();
            }
            else
            {
                answers.onError(DecisionApi.problem(error).toStatus().asRuntimeException());
            }
        });
    }
}
