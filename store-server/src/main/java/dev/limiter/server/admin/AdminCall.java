package dev.limiter.server.admin;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.JsonHints;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.server.control.PolicyState;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.QueryStringDecoder;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A request a route answers: the request, the path's {@code {id}}, its query (already decoded) and
 * who acts; and the readings of query and body that every resource makes alike. What cannot be read
 * is a {@link BadRequest} naming what was wrong.
 */
record AdminCall(FullHttpRequest request, String id, QueryStringDecoder query, String actor)
{
    /** The query's first value of {@code name}, or null when it is absent or empty. */
    String first(final String name)
    {
        final List<String> values = query.parameters().get(name);
        return values == null || values.isEmpty() || values.get(0).isEmpty() ? null : values.get(0);
    }

    /** The query's reason, or "" without one. */
    String reason()
    {
        final String reason = first("reason");
        return reason == null ? "" : reason;
    }

    /** A whole-number query parameter from {@code min} to {@code max}; {@code absent} when not given. */
    int number(final String name, final int absent, final int min, final int max)
    {
        return (int)number(name, (long)absent, min, (long)max);
    }

    /** A whole-number query parameter from {@code min} to {@code max}; {@code absent} when not given. */
    long number(final String name, final long absent, final long min, final long max)
    {
        final String text = first(name);
        if (text == null)
        {
            return absent;
        }
        try
        {
            final long value = Long.parseLong(text);
            if (value >= min && value <= max)
            {
                return value;
            }
        }
        catch (final NumberFormatException e)
        {
            // told below
        }
        throw new BadRequest(name + ": must be a whole number from " + min + " to " + max + ", was '" + text + "'");
    }

    /**
     * Reads the body, protobuf's JSON of a message, into {@code into}.
     *
     * @param what the message as the error names it: "a Policy"
     */
    void parse(final Message.Builder into, final String what)
    {
        final String body = request.content().toString(StandardCharsets.UTF_8);
        if (body.isBlank())
        {
            throw new BadRequest("the request body must be " + what + " as JSON; it was empty; nothing changed");
        }
        try
        {
            JsonFormat.parser().merge(body, into);
        }
        catch (final InvalidProtocolBufferException | RuntimeException e)
        {
            throw new BadRequest("the request body is not " + what + ": " + JsonHints.explain(e.getMessage()) +
                "; nothing changed");
        }
    }

    /** A body may leave its id out; one that names another than the path's is refused. */
    void requireSameId(final String bodyId)
    {
        if (!bodyId.isEmpty() && !bodyId.equals(id))
        {
            throw new BadRequest("the body's id '" + bodyId + "' differs from the path's '" + id +
                "'; nothing changed");
        }
    }

    /** A control-plane change by this call's actor, made now. */
    PolicyCommand.Builder command()
    {
        return PolicyState.command(actor, System.currentTimeMillis());
    }
}
