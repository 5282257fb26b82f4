package dev.limiter.server.admin;

import dev.limiter.protocol.policy.HotKeyReport;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;

import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * What this node alone saw, from its own shards: each node decides (and samples) what its callers send
 * it. {@code GET /v1/hot-keys}, {@code GET /v1/history?since=MILLIS} and
 * {@code GET /v1/policies/{id}/compare?since=MILLIS}.
 */
final class NodeReportRoutes
{
    /** How far ahead of this node's clock a {@code since} may be: clocks differ a little. */
    private static final long FUTURE_SLACK_MILLIS = 60_000L;

    private final Supplier<HotKeyReport> hotKeys;
    private final BiFunction<String, Long, CompletableFuture<NodeStatus.Answer>> compares;
    private final LongFunction<String> history;

    NodeReportRoutes(final Supplier<HotKeyReport> hotKeys,
        final BiFunction<String, Long, CompletableFuture<NodeStatus.Answer>> compares,
        final LongFunction<String> history)
    {
        this.hotKeys = hotKeys;
        this.compares = compares;
        this.history = history;
    }

    /** {@code GET /v1/hot-keys}: the HotKeyReport of this node's busiest bucket keys per shard. */
    void hotKeys(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        reply.accept(AdminApi.json(HttpResponseStatus.OK, hotKeys.get()));
    }

    /** {@code GET /v1/history?since=MILLIS}: this node's bounded history after since (NodeHistory's JSON). */
    void history(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final String since = call.first("since");
        long sinceMillis = 0;
        if (since != null)
        {
            try
            {
                sinceMillis = Long.parseLong(since);
            }
            catch (final NumberFormatException e)
            {
                sinceMillis = -1;
            }
            if (sinceMillis < 0)
            {
                throw new BadRequest("since: must be milliseconds since the epoch (0 or more), was '" + since + "'");
            }
        }
        final String body = history.apply(sinceMillis);
        reply.accept(body == null ? AdminApi.error(HttpResponseStatus.NOT_FOUND, "this node keeps no history") :
            AdminApi.rawJson(HttpResponseStatus.OK, body));
    }

    /**
     * {@code GET /v1/policies/{id}/compare?since=MILLIS}: the policy's shadow version's predictions against
     * what this node's shards enforced.
     */
    void compare(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final String sinceText = call.first("since");
        final long now = System.currentTimeMillis();
        long since = 0;
        if (sinceText != null)
        {
            try
            {
                since = Long.parseLong(sinceText);
            }
            catch (final NumberFormatException e)
            {
                since = -1;
            }
            if (since < 0)
            {
                throw new BadRequest("since: must be a time in milliseconds since the epoch (e.g. " +
                    (now - 3_600_000L) + " for an hour ago), was: " + sinceText);
            }
            if (since > now + FUTURE_SLACK_MILLIS)
            {
                throw new BadRequest("since: " + since + " is in the future (this node's time is " + now + ")");
            }
        }
        compares.apply(call.id(), since).whenComplete((answer, failure) -> reply.accept(
            failure != null ? AdminApi.error(HttpResponseStatus.INTERNAL_SERVER_ERROR,
                "could not read the shards' comparisons: " + failure) :
            answer.status() == 200 ? AdminApi.rawJson(HttpResponseStatus.OK, answer.body()) :
            AdminApi.error(HttpResponseStatus.valueOf(answer.status()), answer.body())));
    }
}
