package dev.limiter.envoy.api;

import com.google.protobuf.Message;
import dev.limiter.protocol.api.v1.AcquireBatchRequest;
import dev.limiter.protocol.api.v1.AcquireBatchResponse;
import dev.limiter.protocol.api.v1.AcquireRequest;
import dev.limiter.protocol.api.v1.AcquireResponse;
import dev.limiter.protocol.api.v1.ReleaseRequest;
import dev.limiter.protocol.api.v1.ReleaseResponse;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;

/**
 * The gRPC methods of {@code limiter.v1.RateLimiter}, made from the messages wire-protocol
 * generates from {@code rate_limiter.proto} (its service needs no generated stub: a unary method is
 * its full name and two marshallers). Java callers use them with grpc-java's {@code ClientCalls}.
 */
public final class RateLimiterMethods
{
    public static final String SERVICE = "limiter.v1.RateLimiter";

    public static final MethodDescriptor<AcquireRequest, AcquireResponse> ACQUIRE =
        unary("Acquire", AcquireRequest.getDefaultInstance(), AcquireResponse.getDefaultInstance());
    public static final MethodDescriptor<AcquireBatchRequest, AcquireBatchResponse> ACQUIRE_BATCH =
        unary("AcquireBatch", AcquireBatchRequest.getDefaultInstance(), AcquireBatchResponse.getDefaultInstance());
    public static final MethodDescriptor<AcquireRequest, AcquireResponse> ACQUIRE_LEASE =
        unary("AcquireLease", AcquireRequest.getDefaultInstance(), AcquireResponse.getDefaultInstance());
    public static final MethodDescriptor<ReleaseRequest, ReleaseResponse> RELEASE =
        unary("Release", ReleaseRequest.getDefaultInstance(), ReleaseResponse.getDefaultInstance());

    private RateLimiterMethods()
    {
    }

    private static <Q extends Message, A extends Message> MethodDescriptor<Q, A> unary(final String name,
        final Q request, final A answer)
    {
        return MethodDescriptor.<Q, A>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .setRequestMarshaller(ProtoUtils.marshaller(request))
            .setResponseMarshaller(ProtoUtils.marshaller(answer))
            .setSampledToLocalTracing(true)
            .build();
    }
}
