package dev.limiter.envoy.api;

import com.google.protobuf.Message;
import dev.limiter.client.Descriptor;
import dev.limiter.client.InvalidDescriptorException;
import dev.limiter.protocol.DescriptorField;
import dev.limiter.protocol.api.v1.AcquireRequest;

/**
 * Reads an {@link AcquireRequest} as the SDK's descriptor and cost, with the SDK's rules
 * ({@link Descriptor.Builder#build()}), before anything is asked of the store: a request that
 * fails here is refused whole, naming the field, and charges nothing.
 */
final class ApiRequests
{
    /** Largest cost one request may ask for (the SDK's and the wire's). */
    static final long MAX_COST = Integer.MAX_VALUE;

    private ApiRequests()
    {
    }

    /** A request the store can be asked: its descriptor and cost. */
    record Call(Descriptor descriptor, int cost)
    {
    }

    /**
     * The call {@code request} asks for.
     *
     * @throws ApiProblem INVALID_ARGUMENT naming the field (tenant, cost, ...)
     */
    static Call read(final AcquireRequest request)
    {
        refuseUnknownFields(request);
        final long cost = request.getCost() == 0 ? 1 : request.getCost();
        if (cost < 1 || cost > MAX_COST)
        {
            throw ApiProblem.invalid("cost", "must be 1 to " + MAX_COST + " tokens (0: 1), was " + cost);
        }
        final Descriptor descriptor;
        try
        {
            descriptor = Descriptor.builder().tenant(request.getTenant()).principal(request.getPrincipal())
                .route(request.getRoute())
                .method(request.getMethod()).clientIp(request.getClientAddress()).region(request.getRegion()).build();
        }
        catch (final InvalidDescriptorException e)
        {
            throw new ApiProblem(io.grpc.Status.Code.INVALID_ARGUMENT, fieldName(e.field()), e.getMessage());
        }
        return new Call(descriptor, (int)cost);
    }

    /**
     * Refuses a message that carries fields this gateway does not know (protobuf keeps them aside
     * as unknown): a field meant to limit, or to be limited, must never be silently dropped.
     *
     * @throws ApiProblem INVALID_ARGUMENT naming the first unknown field by its number
     */
    static void refuseUnknownFields(final Message message)
    {
        if (!message.getUnknownFields().asMap().isEmpty())
        {
            final int number = message.getUnknownFields().asMap().keySet().iterator().next();
            throw ApiProblem.invalid("field " + number, "not a field of "
                + message.getDescriptorForType().getFullName()
                + " (a newer client's field is refused, never dropped: docs/api.md)");
        }
    }

    /** The proto's name of an SDK descriptor field. */
    static String fieldName(final DescriptorField field)
    {
        return switch (field)
        {
            case TENANT -> "tenant";
            case PRINCIPAL -> "principal";
            case METHOD -> "method";
            case ROUTE -> "route";
            case CLIENT_IP -> "client_address";
            case REGION -> "region";
        };
    }
}
