package dev.limiter.envoy;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.InvalidDescriptorException;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.client.LimiterTimeoutException;
import dev.limiter.client.LimiterUnavailableException;
import dev.limiter.client.RateLimitHeaders;
import dev.limiter.protocol.EnvoyDescriptors;
import dev.limiter.protocol.ReasonCode;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Envoy's rate limit service ({@code envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit})
 * answered by the store. Each descriptor of a request becomes one decision (its own bucket, as in
 * envoyproxy/ratelimit: descriptors are not all-or-none), asked of the shard's leader through the
 * SDK, all at once; the answer carries one status per descriptor, in order. Handlers never block:
 * they run on gRPC's transport threads and answer from the SDK's.
 *
 * <p>Failures, against Envoy's {@code failure_mode_deny}: when no node answers within the deadline
 * the SDK decides as the policy says (fail-open: its emergency budget; fail-closed: OVER_LIMIT),
 * and the response says how many descriptors were decided so ({@code decided_locally} in the
 * dynamic metadata). Only when not even that is possible (no policy set held yet) does the call
 * fail with UNAVAILABLE, and Envoy applies {@code failure_mode_deny}.
 */
public final class RateLimitGateway extends RateLimitServiceGrpc.RateLimitServiceImplBase
{
    /** Most descriptors one request may carry (Envoy sends one per rate limit action that applies). */
    public static final int MAX_DESCRIPTORS = 64;
    /** Kept back from the caller's gRPC deadline so that the answer can still reach it. */
    static final long ANSWER_SLACK_NANOS = 1_000_000;

    private final LimiterClient client;
    private final long deadlineNanos;
    private final boolean responseHeaders;
    private final CurrentLimits limits = new CurrentLimits();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong overLimit = new AtomicLong();
    private final AtomicLong decidedLocally = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();

    /**
     * @param client          the SDK client that asks the store (the gateway does not close it)
     * @param deadline        the longest a request waits for the store; shortened to the caller's
     *                        gRPC deadline minus {@link #ANSWER_SLACK_NANOS}
     * @param responseHeaders add RateLimit, RateLimit-Policy and (when over the limit) Retry-After to
     *                        the response headers Envoy sends downstream
     */
    public RateLimitGateway(final LimiterClient client, final Duration deadline, final boolean responseHeaders)
    {
        this.client = client;
        this.deadlineNanos = deadline.toNanos();
        this.responseHeaders = responseHeaders;
        limits.follow(client.policies());
    }

    /** Requests taken so far (answered or not). */
    public long requests()
    {
        return requests.get();
    }

    /** Requests answered OVER_LIMIT. */
    public long overLimit()
    {
        return overLimit.get();
    }

    /** Descriptors the SDK decided on its own because no node answered in time. */
    public long decidedLocally()
    {
        return decidedLocally.get();
    }

    /** Requests that failed (bad input, or no decision at all). */
    public long failed()
    {
        return failed.get();
    }

    @Override
    public void shouldRateLimit(final RateLimitRequest request, final StreamObserver<RateLimitResponse> responses)
    {
        requests.incrementAndGet();
        final String problem = problem(request);
        if (problem != null)
        {
            fail(responses, Status.INVALID_ARGUMENT.withDescription(problem + " (docs/envoy.md)"));
            return;
        }
        long wait = deadlineNanos;
        final Deadline callerDeadline = Context.current().getDeadline();
        if (callerDeadline != null)
        {
            wait = Math.min(wait, callerDeadline.timeRemaining(TimeUnit.NANOSECONDS) - ANSWER_SLACK_NANOS);
        }
        if (wait <= 0)
        {
            fail(responses, Status.DEADLINE_EXCEEDED.withDescription("the call's deadline left no time to ask the store"));
            return;
        }
        final Duration deadline = Duration.ofNanos(wait);
        final Answer answer = new Answer(request, responses);
        for (int i = 0; i < request.getDescriptorsCount(); i++)
        {
            final int index = i;
            final RateLimitDescriptor source = request.getDescriptors(i);
            final Descriptor descriptor;
            try
            {
                descriptor = descriptor(request.getDomain(), source);
            }
            catch (final InvalidDescriptorException e)
            {
                answer.failed(index, Status.INVALID_ARGUMENT.withDescription("descriptors[" + i + "]: " + e.getMessage()));
                continue;
            }
            if (descriptor == null)
            {
                answer.decided(index, null); // more entries than any policy selects: no limit
                continue;
            }
            try
            {
                client.acquire(descriptor, (int)cost(request, source), deadline).whenComplete((decision, error) ->
                {
                    if (error == null)
                    {
                        answer.decided(index, decision);
                    }
                    else
                    {
                        answer.failed(index, status(error));
                    }
                });
            }
            catch (final RuntimeException e)
            {
                answer.failed(index, status(e)); // the client is closing
            }
        }
    }

    /** What is wrong with a request, naming the field, or null when it can be asked. */
    static String problem(final RateLimitRequest request)
    {
        if (request.getDomain().isEmpty())
        {
            return "domain: required (the rate limit filter's domain)";
        }
        if (request.getDescriptorsCount() == 0)
        {
            return "descriptors: at least one is required";
        }
        if (request.getDescriptorsCount() > MAX_DESCRIPTORS)
        {
            return "descriptors: at most " + MAX_DESCRIPTORS + " in one request, was " + request.getDescriptorsCount();
        }
        for (int i = 0; i < request.getDescriptorsCount(); i++)
        {
            final RateLimitDescriptor d = request.getDescriptors(i);
            if (d.getEntriesCount() == 0)
            {
                return "descriptors[" + i + "].entries: at least one entry is required";
            }
            for (int j = 0; j < d.getEntriesCount(); j++)
            {
                if (d.getEntries(j).getKey().isEmpty())
                {
                    return "descriptors[" + i + "].entries[" + j + "].key: required";
                }
            }
            if (d.hasLimit())
            {
                return "descriptors[" + i + "].limit: limit overrides are not accepted; the store's policies set every limit " +
                    "(remove the rate limit action's limit override)";
            }
            final long cost = cost(request, d);
            if (cost < 1 || cost > Integer.MAX_VALUE)
            {
                return "descriptors[" + i + "].hits_addend: must be 1 to " + Integer.MAX_VALUE + ", was " + Long.toUnsignedString(cost);
            }
        }
        return null;
    }

    /** Tokens a descriptor costs: its own hits_addend when set, else the request's, else 1. */
    static long cost(final RateLimitRequest request, final RateLimitDescriptor descriptor)
    {
        if (descriptor.hasHitsAddend())
        {
            return descriptor.getHitsAddend().getValue();
        }
        return request.getHitsAddend() == 0 ? 1 : Integer.toUnsignedLong(request.getHitsAddend());
    }

    /** The store's request for a descriptor (see {@link EnvoyDescriptors}), or null when no policy can select it. */
    static Descriptor descriptor(final String domain, final RateLimitDescriptor source)
    {
        if (source.getEntriesCount() > EnvoyDescriptors.MAX_ENTRIES)
        {
            return null;
        }
        final List<String> keys = new ArrayList<>(source.getEntriesCount());
        final List<String> values = new ArrayList<>(source.getEntriesCount());
        for (final RateLimitDescriptor.Entry entry : source.getEntriesList())
        {
            keys.add(entry.getKey());
            values.add(entry.getValue());
        }
        return Descriptor.builder().method(EnvoyDescriptors.METHOD).route(EnvoyDescriptors.route(domain, keys, values))
            .tenant(EnvoyDescriptors.bucketKey(values)).build();
    }

    private static Status status(final Throwable error)
    {
        final Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof LimiterTimeoutException || cause instanceof LimiterUnavailableException)
        {
            return Status.UNAVAILABLE.withDescription("the store gave no decision: " + cause.getMessage());
        }
        if (cause instanceof LimiterRequestException || cause instanceof IllegalArgumentException)
        {
            return Status.INVALID_ARGUMENT.withDescription(cause.getMessage());
        }
        return Status.INTERNAL.withDescription(String.valueOf(cause));
    }

    private void fail(final StreamObserver<RateLimitResponse> responses, final Status status)
    {
        failed.incrementAndGet();
        responses.onError(status.asRuntimeException());
    }

    /** The status Envoy gets for one descriptor's decision (null: no policy selects it). */
    private DescriptorStatus status(final Decision decision)
    {
        if (decision == null || decision.reason() == ReasonCode.NO_LIMIT)
        {
            return DescriptorStatus.newBuilder().setCode(Code.OK).build();
        }
        final DescriptorStatus.Builder status = DescriptorStatus.newBuilder()
            .setCode(decision.allowed() ? Code.OK : Code.OVER_LIMIT)
            .setLimitRemaining(CurrentLimits.clamp(decision.remaining()));
        final long reset = decision.resetAfterNanos();
        status.setDurationUntilReset(com.google.protobuf.Duration.newBuilder()
            .setSeconds(reset / 1_000_000_000L).setNanos((int)(reset % 1_000_000_000L)));
        final var limit = limits.forPolicy(decision.policyId());
        if (limit != null)
        {
            status.setCurrentLimit(limit);
        }
        return status.build();
    }

    /** Collects one request's decisions; the last one to arrive answers (on whichever thread brought it). */
    private final class Answer
    {
        private final RateLimitRequest request;
        private final StreamObserver<RateLimitResponse> responses;
        private final Decision[] decisions;
        private final AtomicInteger pending;
        private volatile Status failure;

        Answer(final RateLimitRequest request, final StreamObserver<RateLimitResponse> responses)
        {
            this.request = request;
            this.responses = responses;
            this.decisions = new Decision[request.getDescriptorsCount()];
            this.pending = new AtomicInteger(decisions.length);
        }

        void decided(final int index, final Decision decision)
        {
            decisions[index] = decision;
            arrived();
        }

        void failed(final int index, final Status status)
        {
            if (failure == null)
            {
                failure = status;
            }
            arrived();
        }

        private void arrived()
        {
            // The decrement publishes the slot written before it to the thread that sees zero.
            if (pending.decrementAndGet() != 0)
            {
                return;
            }
            if (failure != null)
            {
                fail(responses, failure);
                return;
            }
            final RateLimitResponse.Builder response = RateLimitResponse.newBuilder();
            Code overall = Code.OK;
            Decision shown = null;
            int local = 0;
            for (final Decision decision : decisions)
            {
                final DescriptorStatus status = status(decision);
                response.addStatuses(status);
                if (status.getCode() == Code.OVER_LIMIT)
                {
                    overall = Code.OVER_LIMIT;
                }
                if (decision != null && decision.degraded())
                {
                    local++;
                }
                if (decision != null && decision.reason() != ReasonCode.NO_LIMIT && mostTelling(decision, shown))
                {
                    shown = decision;
                }
            }
            response.setOverallCode(overall);
            if (overall == Code.OVER_LIMIT)
            {
                overLimit.incrementAndGet();
            }
            if (responseHeaders && shown != null)
            {
                for (final Map.Entry<String, String> header : RateLimitHeaders.of(shown).entrySet())
                {
                    response.addResponseHeadersToAdd(HeaderValue.newBuilder().setKey(header.getKey()).setValue(header.getValue()));
                }
            }
            if (local > 0)
            {
                decidedLocally.addAndGet(local);
                response.setDynamicMetadata(Struct.newBuilder()
                    .putFields("decided_locally", Value.newBuilder().setNumberValue(local).build()));
            }
            responses.onNext(response.build());
            responses.onCompleted();
        }
    }

    /** The decision the headers describe: a denial over an allowance, then the one with the least left. */
    private static boolean mostTelling(final Decision candidate, final Decision shown)
    {
        if (shown == null)
        {
            return true;
        }
        if (candidate.allowed() != shown.allowed())
        {
            return !candidate.allowed();
        }
        return candidate.remaining() < shown.remaining();
    }
}
