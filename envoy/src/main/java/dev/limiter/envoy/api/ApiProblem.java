package dev.limiter.envoy.api;

import dev.limiter.protocol.api.v1.Problem;
import io.grpc.Status;

/**
 * Why a request (or one item of a batch) got no decision: a gRPC status code, the field at fault
 * (empty when none is) and a message that names it. Nothing is charged for a request that fails so.
 */
final class ApiProblem extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    private final transient Status.Code code;
    private final String field;

    ApiProblem(final Status.Code code, final String field, final String message)
    {
        super(message, null, false, false);
        this.code = code;
        this.field = field;
    }

    /** INVALID_ARGUMENT for {@code field}, the message starting with its name. */
    static ApiProblem invalid(final String field, final String message)
    {
        return new ApiProblem(Status.Code.INVALID_ARGUMENT, field, field + ": " + message);
    }

    Status.Code code()
    {
        return code;
    }

    String field()
    {
        return field;
    }

    /** This problem with {@code prefix} before its field (an item of a batch: {@code items[2].}). */
    ApiProblem within(final String prefix)
    {
        return new ApiProblem(code, field.isEmpty() ? "" : prefix + field, field.isEmpty() ? getMessage() : prefix
            + getMessage());
    }

    Problem toProto()
    {
        return Problem.newBuilder().setCode(code.name()).setField(field).setMessage(getMessage()).build();
    }

    Status toStatus()
    {
        return Status.fromCode(code).withDescription(getMessage());
    }
}
