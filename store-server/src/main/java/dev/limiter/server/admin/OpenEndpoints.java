package dev.limiter.server.admin;

import dev.limiter.server.metrics.ServerMetrics;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;

import java.nio.charset.StandardCharsets;

/**
 * The admin port's endpoints outside {@code /v1/}, open to anyone who can reach the port:
 * {@code GET /metrics} (Prometheus text), {@code /health} and {@code /health/live} (the process
 * serves), {@code /health/ready} and {@code /status} (JSON); and {@code /region/v1/report}, which
 * takes the regions' exchange token rather than the admin one. GET and HEAD only.
 */
final class OpenEndpoints
{
    static final String PLAIN_TYPE = "text/plain; charset=utf-8";
    private static final String PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";
    private static final String JSON_TYPE = "application/json";

    private final ServerMetrics metrics;
    private final NodeStatus node;

    OpenEndpoints(final ServerMetrics metrics, final NodeStatus node)
    {
        this.metrics = metrics;
        this.node = node;
    }

    /** The answer to a well-formed request for {@code path} (decoded, without its query). */
    FullHttpResponse answer(final FullHttpRequest request, final String path)
    {
        final FullHttpResponse response;
        if (!HttpMethod.GET.equals(request.method()) && !HttpMethod.HEAD.equals(request.method()))
        {
            response = text(HttpResponseStatus.METHOD_NOT_ALLOWED, PLAIN_TYPE, "only GET is served here\n");
            response.headers().set(HttpHeaderNames.ALLOW, "GET, HEAD");
        }
        else if (path.equals("/region/v1/report"))
        {
            // The regions' exchange: its own token (another region's operators hold no admin token here).
            final NodeStatus.Answer answer = node.regionReport(request.headers().get(HttpHeaderNames.AUTHORIZATION));
            response = text(HttpResponseStatus.valueOf(answer.status()), JSON_TYPE, answer.body());
            if (answer.status() == 401)
            {
                response.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"limiter-regions\"");
            }
        }
        else if (path.equals("/metrics"))
        {
            response = text(HttpResponseStatus.OK, PROMETHEUS_TYPE, metrics.scrape());
        }
        else if (path.equals("/status"))
        {
            response = text(HttpResponseStatus.OK, JSON_TYPE, node.statusJson() + "\n");
        }
        else if (path.equals("/health/ready"))
        {
            final Readiness readiness = node.readiness();
            response = text(readiness.ready() ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                JSON_TYPE, readiness.json() + "\n");
        }
        else if (path.equals("/health") || path.equals("/health/live"))
        {
            response = text(node.healthy() ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                JSON_TYPE, node.healthJson() + "\n");
        }
        else
        {
            response = text(HttpResponseStatus.NOT_FOUND, PLAIN_TYPE, "no such endpoint: " + path +
                " (try /metrics, /health, /health/live, /health/ready, /status or /region/v1/report)\n");
        }
        return response;
    }

    /** An answer of {@code type} with {@code body} as UTF-8. */
    static FullHttpResponse text(final HttpResponseStatus status, final String type, final String body)
    {
        final ByteBuf content = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, content);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, type);
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
        return response;
    }
}
