package dev.limiter.envoy;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.limiter.client.Decision;
import dev.limiter.client.RateLimitHeaders;
import dev.limiter.protocol.ReasonCode;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * One Envoy request's answer, put together as its descriptors' decisions arrive (on whichever
 * threads bring them): one status per descriptor, in order, then {@code overall_code} from those
 * statuses. The last arrival answers: OVER_LIMIT when any status is; otherwise, if a descriptor
 * got no decision at all, the call fails with that descriptor's status; otherwise OK.
 */
final class DescriptorAnswers
{
    /** Hears every answer sent: the response, and how many descriptors the SDK decided on its own. */
    interface Answered
    {
        void answered(RateLimitResponse response, int decidedLocally);
    }

    /** What envoyproxy/ratelimit answers for an unlimited descriptor's {@code limit_remaining}: uint32's largest. */
    static final int UNLIMITED_REMAINING = 0xFFFF_FFFF;
    private static final DescriptorStatus OK = DescriptorStatus.newBuilder().setCode(Code.OK).build();
    private static final DescriptorStatus UNKNOWN = DescriptorStatus.newBuilder().setCode(Code.UNKNOWN).build();

    private final DescriptorStatus[] statuses;
    private final Decision[] decisions;
    private final boolean responseHeaders;
    private final EnvoyPolicies policies;
    private final Answered answered;
    private final Consumer<Status> failed;
    /** Descriptors still to arrive, plus one that {@link #whenDone} gives up once the answer has somewhere to go. */
    private final AtomicInteger pending;
    private volatile Status failure;
    private StreamObserver<RateLimitResponse> responses;

    DescriptorAnswers(final int count, final boolean responseHeaders, final EnvoyPolicies policies, final Answered answered,
        final Consumer<Status> failed)
    {
        this.statuses = new DescriptorStatus[count];
        this.decisions = new Decision[count];
        this.responseHeaders = responseHeaders;
        this.policies = policies;
        this.answered = answered;
        this.failed = failed;
        this.pending = new AtomicInteger(count + 1);
    }

    /** Descriptor {@code i} has no limit (no policy can select it, or another policy of the request replaces its own): OK. */
    void noLimit(final int i)
    {
        statuses[i] = OK;
        arrived();
    }

    /**
     * Descriptor {@code i}'s decision.
     *
     * @param overCost its cost was beyond any limit: OVER_LIMIT, unless it has no limit
     */
    void decided(final int i, final Decision decision, final boolean overCost)
    {
        decisions[i] = decision;
        statuses[i] = status(decision, overCost);
        arrived();
    }

    /** Descriptor {@code i} got no decision at all. */
    void failed(final int i, final Status status)
    {
        if (failure == null)
        {
            failure = status;
        }
        statuses[i] = UNKNOWN;
        arrived();
    }

    /** Every descriptor has been asked about: the answer goes to {@code responses} once the last decision is in. */
    void whenDone(final StreamObserver<RateLimitResponse> responses)
    {
        this.responses = responses;
        arrived();
    }

    private void arrived()
    {
        // The decrement publishes the slot written before it to the thread that sees zero.
        if (pending.decrementAndGet() == 0)
        {
            answer();
        }
    }

    private void answer()
    {
        Code overall = Code.OK;
        for (final DescriptorStatus status : statuses)
        {
            if (status.getCode() == Code.OVER_LIMIT)
            {
                overall = Code.OVER_LIMIT;
            }
        }
        if (overall != Code.OVER_LIMIT && failure != null)
        {
            failed.accept(failure);
            responses.onError(failure.asRuntimeException());
            return;
        }
        final RateLimitResponse.Builder response = RateLimitResponse.newBuilder().setOverallCode(overall);
        Decision shown = null;
        int local = 0;
        for (int i = 0; i < statuses.length; i++)
        {
            response.addStatuses(statuses[i]);
            final Decision decision = decisions[i];
            if (decision != null && decision.degraded())
            {
                local++;
            }
            if (decision != null && decision.reason() != ReasonCode.NO_LIMIT && mostTelling(decision, shown))
            {
                shown = decision;
            }
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
            response.setDynamicMetadata(Struct.newBuilder().putFields("decided_locally", Value.newBuilder().setNumberValue(local).build()));
        }
        final RateLimitResponse built = response.build();
        answered.answered(built, local);
        responses.onNext(built);
        responses.onCompleted();
    }

    /** The status Envoy gets for one descriptor's decision. */
    private DescriptorStatus status(final Decision decision, final boolean overCost)
    {
        if (decision.reason() == ReasonCode.NO_LIMIT)
        {
            return policies.unlimited(decision.policyId()) ?
                DescriptorStatus.newBuilder().setCode(Code.OK).setLimitRemaining(UNLIMITED_REMAINING).build() : OK;
        }
        final DescriptorStatus.Builder status = DescriptorStatus.newBuilder()
            .setCode(decision.allowed() && !overCost ? Code.OK : Code.OVER_LIMIT)
            .setLimitRemaining(EnvoyPolicies.clamp(decision.remaining()));
        final long reset = decision.resetAfterNanos();
        status.setDurationUntilReset(com.google.protobuf.Duration.newBuilder()
            .setSeconds(reset / 1_000_000_000L).setNanos((int)(reset % 1_000_000_000L)));
        final RateLimit limit = policies.limitOf(decision.policyId());
        if (limit != null)
        {
            status.setCurrentLimit(limit);
        }
        return status.build();
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
