package dev.limiter.envoy.api;

import dev.limiter.client.Decision;
import dev.limiter.client.Lease;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.client.LimiterTimeoutException;
import dev.limiter.client.LimiterUnavailableException;
import dev.limiter.protocol.api.v1.AcquireBatchRequest;
import dev.limiter.protocol.api.v1.AcquireBatchResponse;
import dev.limiter.protocol.api.v1.AcquireRequest;
import dev.limiter.protocol.api.v1.AcquireResponse;
import dev.limiter.protocol.api.v1.ItemResult;
import dev.limiter.protocol.api.v1.ReleaseRequest;
import dev.limiter.protocol.api.v1.ReleaseResponse;
import io.grpc.Status;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The RPCs of {@code limiter.v1.RateLimiter}, transport aside: each request is read and checked
 * whole ({@link ApiRequests}) before the SDK asks the store, and answered from the SDK's threads
 * (nothing here blocks). gRPC ({@link ApiGrpcService}) and HTTP ({@link ApiHttpHandler}) both call
 * it, so both decide alike. A failed future carries an {@link ApiProblem}.
 */
public final class DecisionApi
{
    /** Most items one batch may carry. */
    public static final int MAX_BATCH = 64;

    private final LimiterClient client;
    private final long deadlineNanos;
    private final AtomicLong decisions = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong invalid = new AtomicLong();

    /**
     * @param client   the SDK client that asks the store (not closed here)
     * @param deadline the longest a decision waits for the store (a caller's shorter deadline wins)
     */
    public DecisionApi(final LimiterClient client, final Duration deadline)
    {
        this.client = client;
        this.deadlineNanos = deadline.toNanos();
    }

    /** Decisions answered (allowed or not). */
    public long decisions()
    {
        return decisions.get();
    }

    /** Decisions that refused (allowed false). */
    public long refused()
    {
        return refused.get();
    }

    /** Requests and batch items refused as invalid, or for a tenant their token may not ask for, charging nothing. */
    public long invalid()
    {
        return invalid.get();
    }

    /** The store's wait for a call whose caller allows {@code callerNanos} (or any, when negative). */
    Duration deadline(final long callerNanos)
    {
        final long wait = callerNanos < 0 ? deadlineNanos : Math.min(deadlineNanos, callerNanos);
        if (wait <= 0)
        {
            throw new ApiProblem(Status.Code.DEADLINE_EXCEEDED, "",
                "the call's deadline left no time to ask the store");
        }
        return Duration.ofNanos(wait);
    }

    /** An answer, with the SDK's decision it was made of (HTTP's headers are written from it). */
    record Answered(AcquireResponse response, Decision decision)
    {
    }

    /**
     * One decision for a caller whose credential grants {@code grant}; a grant of a concurrency limit carries its
     * lease id.
     */
    CompletableFuture<Answered> acquire(final AcquireRequest request, final long callerNanos, final TenantGrant grant)
    {
        final ApiRequests.Call call;
        final Duration deadline;
        try
        {
            call = granted(ApiRequests.read(request), grant);
            deadline = deadline(callerNanos);
        }
        catch (final ApiProblem e)
        {
            invalid.incrementAndGet();
            return CompletableFuture.failedFuture(e);
        }
        return ask(call, deadline);
    }

    private static ApiRequests.Call granted(final ApiRequests.Call call, final TenantGrant grant)
    {
        final String tenant = call.descriptor().tenant();
        if (!grant.allows(tenant))
        {
            throw grant.refusal(tenant);
        }
        return call;
    }

    private CompletableFuture<Answered> ask(final ApiRequests.Call call, final Duration deadline)
    {
        final CompletableFuture<Lease> asked;
        try
        {
            asked = client.acquireLeaseAsync(call.descriptor(), call.cost(), deadline);
        }
        catch (final RuntimeException e)
        {
            return CompletableFuture.failedFuture(problem(e)); // the client is closing
        }
        return asked.handle((lease, error) ->
        {
            if (error != null)
            {
                throw problem(error);
            }
            decisions.incrementAndGet();
            if (!lease.granted())
            {
                refused.incrementAndGet();
            }
            final AcquireResponse.Builder answer = AcquireResponse.newBuilder().setDecision(toProto(lease.decision()));
            if (lease.id() != null)
            {
                answer.setLeaseId(lease.id());
            }
            return new Answered(answer.build(), lease.decision());
        });
    }

    /** Every valid item asked at once, each answered on its own; an invalid item gets its problem alone. */
    CompletableFuture<AcquireBatchResponse> acquireBatch(final AcquireBatchRequest request, final long callerNanos,
        final TenantGrant grant)
    {
        final int count = request.getItemsCount();
        final Duration deadline;
        try
        {
            ApiRequests.refuseUnknownFields(request);
            if (count == 0)
            {
                throw ApiProblem.invalid("items", "at least one is required");
            }
            if (count > MAX_BATCH)
            {
                throw ApiProblem.invalid("items", "at most " + MAX_BATCH + " in one batch, was " + count);
            }
            deadline = deadline(callerNanos);
        }
        catch (final ApiProblem e)
        {
            invalid.incrementAndGet();
            return CompletableFuture.failedFuture(e);
        }
        // Every item is read before any is asked.
        final ApiRequests.Call[] calls = new ApiRequests.Call[count];
        final ItemResult[] results = new ItemResult[count];
        for (int i = 0; i < count; i++)
        {
            try
            {
                calls[i] = granted(ApiRequests.read(request.getItems(i)), grant);
            }
            catch (final ApiProblem e)
            {
                invalid.incrementAndGet();
                results[i] = ItemResult.newBuilder().setProblem(e.within("items[" + i + "].").toProto()).build();
            }
        }
        @SuppressWarnings("unchecked")
        final CompletableFuture<Void>[] pending = new CompletableFuture[count];
        for (int i = 0; i < count; i++)
        {
            final int index = i;
            pending[i] = calls[i] == null ? CompletableFuture.completedFuture(null) : ask(calls[i],
                deadline).handle((answer, error) ->
            {
                results[index] = error == null ? ItemResult.newBuilder().setAnswer(answer.response()).build() :
                    ItemResult.newBuilder().setProblem(problem(error).toProto()).build();
                return null;
            });
        }
        return CompletableFuture.allOf(pending).thenApply(done ->
        {
            // Each item's future completed after writing its result: allOf sees them all.
            final AcquireBatchResponse.Builder answer = AcquireBatchResponse.newBuilder();
            for (final ItemResult result : results)
            {
                answer.addResults(result);
            }
            return answer.build();
        });
    }

    /** Gives a lease back by its id. */
    CompletableFuture<ReleaseResponse> release(final ReleaseRequest request)
    {
        try
        {
            ApiRequests.refuseUnknownFields(request);
            if (request.getLeaseId().isEmpty())
            {
                throw ApiProblem.invalid("lease_id", "required (the lease_id of an AcquireLease answer)");
            }
        }
        catch (final ApiProblem e)
        {
            invalid.incrementAndGet();
            return CompletableFuture.failedFuture(e);
        }
        final CompletableFuture<Void> released;
        try
        {
            released = client.release(request.getLeaseId());
        }
        catch (final IllegalArgumentException e)
        {
            invalid.incrementAndGet();
            return CompletableFuture.failedFuture(ApiProblem.invalid("lease_id", "not a lease id ("
                + e.getMessage() + ")"));
        }
        catch (final RuntimeException e)
        {
            return CompletableFuture.failedFuture(problem(e));
        }
        return released.handle((done, error) ->
        {
            if (error != null)
            {
                throw problem(error);
            }
            return ReleaseResponse.getDefaultInstance();
        });
    }

    /** The SDK's decision as the API's message. */
    static dev.limiter.protocol.api.v1.Decision toProto(final Decision decision)
    {
        return dev.limiter.protocol.api.v1.Decision.newBuilder()
            .setAllowed(decision.allowed())
            .setReason(decision.reason().name())
            .setRemaining(decision.remaining())
            .setLimit(decision.limit())
            .setRetryAfterMs(decision.retryable() ? millisUp(decision.retryAfterNanos()) : -1)
            .setResetAfterMs(millisUp(decision.resetAfterNanos()))
            .setPolicyId(decision.policyId() == null ? "" : decision.policyId())
            .setWindowSeconds(decision.windowSeconds())
            .setDecidedLocally(decision.degraded())
            .setWaitMs(millisUp(decision.waitNanos()))
            .setDecisionId(decision.decisionId().orElse(""))
            .build();
    }

    private static long millisUp(final long nanos)
    {
        return nanos <= 0 ? 0 : (nanos + TimeUnit.MILLISECONDS.toNanos(1) - 1) / TimeUnit.MILLISECONDS.toNanos(1);
    }

    /** What an SDK failure means to a caller. */
    static ApiProblem problem(final Throwable error)
    {
        final Throwable cause = error instanceof CompletionException && error.getCause() != null
            ? error.getCause() : error;
        if (cause instanceof ApiProblem problem)
        {
            return problem;
        }
        if (cause instanceof LimiterTimeoutException || cause instanceof LimiterUnavailableException)
        {
            return new ApiProblem(Status.Code.UNAVAILABLE, "", "the store gave no decision: " + cause.getMessage());
        }
        if (cause instanceof LimiterRequestException)
        {
            return new ApiProblem(Status.Code.UNAVAILABLE, "", "the store refused the request: " + cause.getMessage());
        }
        return new ApiProblem(Status.Code.INTERNAL, "", String.valueOf(cause));
    }
}
