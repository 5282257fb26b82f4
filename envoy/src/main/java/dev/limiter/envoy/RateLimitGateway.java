package dev.limiter.envoy;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.client.LimiterTimeoutException;
import dev.limiter.client.LimiterUnavailableException;
import dev.limiter.envoy.raw.RawEntry;
import dev.limiter.envoy.raw.RawRateLimitDescriptor;
import dev.limiter.envoy.raw.RawRateLimitRequest;
import dev.limiter.protocol.EnvoyDescriptors;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.BindableService;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Envoy's rate limit service ({@code envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit})
 * answered by the store, with envoyproxy/ratelimit's meaning field by field. Each descriptor of a
 * request is decided on its own (its own bucket; descriptors are not all-or-none), asked of its
 * shard's leader through the SDK, all at once, and gets its own status; {@code overall_code} is
 * OVER_LIMIT when any status is. Handlers never block: they run on gRPC's transport threads and
 * answer from the SDK's.
 *
 * <p>A descriptor's input never fails the call (Envoy would then let the request through): any
 * bytes are a value (the request is read with its strings as bytes, see {@code raw_rls.proto}),
 * every descriptor is built before any is charged, and a descriptor no policy selects (more
 * entries than any selector, none at all, a key no selector names) has no limit. Only a request
 * with no domain, no descriptors or more than {@link #MAX_DESCRIPTORS} fails, as a whole
 * (INVALID_ARGUMENT, charging nothing).
 *
 * <p>Costs, as envoyproxy/ratelimit reads {@code hits_addend}: the descriptor's own when set,
 * else the request's, where the request's 0 means 1. A descriptor's 0 is a check: nothing is
 * charged, and it is OVER_LIMIT when its limit has no token left. A cost above 2^31-1 is
 * OVER_LIMIT for a descriptor a policy limits (checked, never charged); one above the burst is
 * refused by the node (COST_EXCEEDS_BURST). A descriptor's {@code limit} override is never
 * taken: the store's policies set every limit.
 *
 * <p>Failures, against Envoy's {@code failure_mode_deny}: when no node answers within the deadline
 * the SDK decides as the policy says (fail-open: its emergency budget; fail-closed: OVER_LIMIT),
 * and the response says how many descriptors were decided so ({@code decided_locally} in the
 * dynamic metadata). When a descriptor gets no decision at all (no policy set held yet), the call
 * fails with UNAVAILABLE and Envoy applies {@code failure_mode_deny}, unless another descriptor
 * is OVER_LIMIT: the answer is then OVER_LIMIT.
 */
public final class RateLimitGateway implements BindableService
{
    /** Most descriptors one request may carry (Envoy sends one per rate limit action that applies). */
    public static final int MAX_DESCRIPTORS = 64;
    /** Kept back from the caller's gRPC deadline so that the answer can still reach it. */
    static final long ANSWER_SLACK_NANOS = 1_000_000;

    private final LimiterClient client;
    private final long deadlineNanos;
    private final boolean responseHeaders;
    private final EnvoyPolicies policies = new EnvoyPolicies();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong overLimit = new AtomicLong();
    private final AtomicLong decidedLocally = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong overridesIgnored = new AtomicLong();
    private final AtomicLong checks = new AtomicLong();

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
        policies.follow(client.policies());
    }

    /**
     * Envoy's service and method, with the request read by {@code raw_rls.proto} (its strings as
     * bytes) and the answer written as Envoy's own message.
     */
    @Override
    public ServerServiceDefinition bindService()
    {
        final MethodDescriptor<RawRateLimitRequest, RateLimitResponse> method = RateLimitServiceGrpc.getShouldRateLimitMethod()
            .toBuilder(ProtoUtils.marshaller(RawRateLimitRequest.getDefaultInstance()),
                ProtoUtils.marshaller(RateLimitResponse.getDefaultInstance()))
            .build();
        return ServerServiceDefinition.builder(RateLimitServiceGrpc.SERVICE_NAME)
            .addMethod(method, ServerCalls.asyncUnaryCall(this::shouldRateLimit))
            .build();
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

    /** Requests that failed (no domain or descriptors, too many, or no decision at all). */
    public long failed()
    {
        return failed.get();
    }

    /** Descriptors that carried a {@code limit} override, decided by the store's policy instead. */
    public long overridesIgnored()
    {
        return overridesIgnored.get();
    }

    /** Descriptors checked without a charge ({@code hits_addend} 0, or a cost beyond 2^31-1). */
    public long checks()
    {
        return checks.get();
    }

    /** Answers an Envoy request given as Envoy's own message (its strings are UTF-8 already). */
    public void shouldRateLimit(final RateLimitRequest request, final StreamObserver<RateLimitResponse> responses)
    {
        try
        {
            shouldRateLimit(RawRateLimitRequest.parseFrom(request.toByteString()), responses);
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalStateException("Envoy's request and its raw form have one wire format", e);
        }
    }

    void shouldRateLimit(final RawRateLimitRequest request, final StreamObserver<RateLimitResponse> responses)
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
        // Every descriptor is built, and its cost read, before any is charged.
        final int count = request.getDescriptorsCount();
        final Descriptor[] descriptors = new Descriptor[count];
        final long[] costs = new long[count];
        for (int i = 0; i < count; i++)
        {
            final RawRateLimitDescriptor source = request.getDescriptors(i);
            if (source.hasLimit())
            {
                overridesIgnored.incrementAndGet();
            }
            costs[i] = cost(request, source);
            descriptors[i] = descriptor(request.getDomain(), source);
        }
        final boolean[] replaced = policies.replaced(descriptors);
        final DescriptorAnswers answer = new DescriptorAnswers(count, responseHeaders, policies, this::answered, this::failedWith);
        for (int i = 0; i < count; i++)
        {
            if (descriptors[i] == null || (replaced != null && replaced[i]))
            {
                answer.noLimit(i); // no policy can select it, or another of the request's policies replaces its own
                continue;
            }
            final long cost = costs[i];
            final boolean check = cost == 0 || cost > Integer.MAX_VALUE;
            if (check)
            {
                checks.incrementAndGet();
            }
            final int index = i;
            try
            {
                final CompletableFuture<Decision> decided = check ? client.check(descriptors[i], deadline) :
                    client.acquire(descriptors[i], (int)cost, deadline);
                decided.whenComplete((decision, error) ->
                {
                    if (error == null)
                    {
                        answer.decided(index, decision, cost > Integer.MAX_VALUE);
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
        answer.whenDone(responses);
    }

    /** What is wrong with a request as a whole, naming the field, or null when it can be asked. */
    static String problem(final RawRateLimitRequest request)
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
        return null;
    }

    /**
     * Tokens a descriptor costs, as an unsigned number: its own hits_addend when set (0 included:
     * a check), else the request's, where 0 means 1. A descriptor's value of 2^63 or more is
     * returned as {@link Long#MAX_VALUE}: it is beyond any cost either way.
     */
    static long cost(final RawRateLimitRequest request, final RawRateLimitDescriptor descriptor)
    {
        if (descriptor.hasHitsAddend())
        {
            final long value = descriptor.getHitsAddend().getValue();
            return value < 0 ? Long.MAX_VALUE : value;
        }
        return request.getHitsAddend() == 0 ? 1 : Integer.toUnsignedLong(request.getHitsAddend());
    }

    /** The store's request for a descriptor (see {@link EnvoyDescriptors}), or null when no policy can select it. */
    static Descriptor descriptor(final ByteString domain, final RawRateLimitDescriptor source)
    {
        if (source.getEntriesCount() == 0 || source.getEntriesCount() > EnvoyDescriptors.MAX_ENTRIES)
        {
            return null;
        }
        final List<byte[]> keys = new ArrayList<>(source.getEntriesCount());
        final List<byte[]> values = new ArrayList<>(source.getEntriesCount());
        for (final RawEntry entry : source.getEntriesList())
        {
            keys.add(entry.getKey().toByteArray());
            values.add(entry.getValue().toByteArray());
        }
        return Descriptor.envoy(domain.toByteArray(), keys, values);
    }

    private static Status status(final Throwable error)
    {
        final Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof LimiterTimeoutException || cause instanceof LimiterUnavailableException)
        {
            return Status.UNAVAILABLE.withDescription("the store gave no decision: " + cause.getMessage());
        }
        if (cause instanceof LimiterRequestException)
        {
            return Status.UNAVAILABLE.withDescription("the store refused a descriptor: " + cause.getMessage());
        }
        return Status.INTERNAL.withDescription(String.valueOf(cause));
    }

    private void answered(final RateLimitResponse response, final int decidedHere)
    {
        if (response.getOverallCode() == RateLimitResponse.Code.OVER_LIMIT)
        {
            overLimit.incrementAndGet();
        }
        decidedLocally.addAndGet(decidedHere);
    }

    private void failedWith(final Status status)
    {
        failed.incrementAndGet();
    }

    private void fail(final StreamObserver<RateLimitResponse> responses, final Status status)
    {
        failed.incrementAndGet();
        responses.onError(status.asRuntimeException());
    }
}
