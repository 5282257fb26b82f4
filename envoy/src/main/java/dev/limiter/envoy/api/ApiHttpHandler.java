package dev.limiter.envoy.api;

import com.google.protobuf.Message;
import dev.limiter.client.RateLimitHeaders;
import dev.limiter.protocol.api.v1.AcquireBatchRequest;
import dev.limiter.protocol.api.v1.AcquireRequest;
import dev.limiter.protocol.api.v1.ErrorResponse;
import dev.limiter.protocol.api.v1.ReleaseRequest;
import io.grpc.Status;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.timeout.IdleStateEvent;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * {@code limiter.v1.RateLimiter} over HTTP/1.1 and JSON, one request at a time per connection (the
 * next is not read until this one is answered, so a client cannot pile requests up; a request
 * pipelined behind one in progress is not decided, and the connection closes after that answer).
 * Routes:
 * <ul>
 *   <li>{@code POST /v1/acquire}: an AcquireRequest; 200 when allowed, 429 when refused, with
 *   RateLimit-Policy, RateLimit and (refused, retryable) Retry-After headers;</li>
 *   <li>{@code POST /v1/acquire/batch}: an AcquireBatchRequest; 200 with one result per item;</li>
 *   <li>{@code POST /v1/leases}: as /v1/acquire, the answer's lease_id to be given back with</li>
 *   <li>{@code DELETE /v1/leases/{lease_id}}: 204.</li>
 * </ul>
 * Every other answer is an ErrorResponse naming the field at fault: 400 (bad JSON, unknown field,
 * bad value), 401 (token), 403 (a tenant the token may not ask for), 404, 405, 413 (body over the port's bound,
 * answered by the aggregator
 * before this handler), 503 (no decision from the store), 504 (deadline).
 */
final class ApiHttpHandler extends SimpleChannelInboundHandler<FullHttpRequest>
{
    static final String ACQUIRE = "/v1/acquire";
    static final String BATCH = "/v1/acquire/batch";
    static final String LEASES = "/v1/leases";
    private static final String JSON = "application/json";

    private final DecisionApi api;
    private final BearerTokens tokens;
    /** A request of this connection is being answered (its event loop only). */
    private boolean answering;
    /**
     * The client sent another request before this one was answered (HTTP pipelining, which this
     * port refuses): it is not decided, and the connection closes once the answer in progress is
     * written, so no answer can be taken for another request's.
     */
    private boolean pipelined;

    /** @param tokens the accepted bearer tokens, or null when the port authenticates by client certificate only */
    ApiHttpHandler(final DecisionApi api, final BearerTokens tokens)
    {
        this.api = api;
        this.tokens = tokens;
    }

    @Override
    protected void channelRead0(final ChannelHandlerContext ctx, final FullHttpRequest request)
    {
        final RequestDeadline deadline = ctx.pipeline().get(RequestDeadline.class);
        if (deadline != null)
        {
            deadline.arrived();
        }
        if (answering)
        {
            pipelined = true; // decoded from the same read as the request in progress: not decided
            return;
        }
        answering = true;
        final boolean keepAlive = HttpUtil.isKeepAlive(request);
        ctx.channel().config().setAutoRead(false); // one request at a time: read on once this one is answered
        CompletableFuture<FullHttpResponse> answer;
        try
        {
            answer = route(request);
        }
        catch (final RuntimeException e)
        {
            // An ApiProblem names what was wrong; anything else is answered too (500), never left hanging.
            answer = CompletableFuture.completedFuture(error(DecisionApi.problem(e)));
        }
        // Answered on the connection's event loop, which owns answering and pipelined.
        answer.whenCompleteAsync((response, failure) ->
        {
            final FullHttpResponse written = failure == null ? response : error(DecisionApi.problem(failure));
            HttpUtil.setContentLength(written, written.content().readableBytes());
            final boolean open = keepAlive && !pipelined;
            HttpUtil.setKeepAlive(written, open);
            ctx.writeAndFlush(written).addListener(open ? (ChannelFutureListener)f ->
            {
                answering = false;
                if (f.isSuccess())
                {
                    f.channel().config().setAutoRead(true);
                }
                else
                {
                    f.channel().close();
                }
            } : ChannelFutureListener.CLOSE);
        }, ctx.executor());
    }

    private CompletableFuture<FullHttpResponse> route(final FullHttpRequest request)
    {
        if (!request.decoderResult().isSuccess())
        {
            throw ApiProblem.invalid("request", "not a valid HTTP request: " + request.decoderResult().cause());
        }
        final TenantGrant grant = tokens == null ? TenantGrant.ANY
            : tokens.grantOf(request.headers().get(HttpHeaderNames.AUTHORIZATION));
        if (grant == null)
        {
            throw new ApiProblem(Status.Code.UNAUTHENTICATED, "authorization",
                "authorization: a bearer token of the gateway's --token-file "
                + "is required (Authorization: Bearer TOKEN)");
        }
        final String path = new QueryStringDecoder(request.uri()).path();
        final HttpMethod method = request.method();
        if (path.equals(ACQUIRE) || path.equals(LEASES))
        {
            requirePost(method, path);
            final AcquireRequest body = JsonBodies.parse(body(request), AcquireRequest.getDefaultInstance());
            return api.acquire(body, -1, grant).thenApply(answered ->
            {
                final FullHttpResponse response = json(answered.decision().allowed() ? HttpResponseStatus.OK :
                    HttpResponseStatus.TOO_MANY_REQUESTS, answered.response());
                for (final Map.Entry<String, String> header : RateLimitHeaders.of(answered.decision()).entrySet())
                {
                    response.headers().set(header.getKey(), header.getValue());
                }
                return response;
            });
        }
        if (path.equals(BATCH))
        {
            requirePost(method, path);
            final AcquireBatchRequest body = JsonBodies.parse(body(request), AcquireBatchRequest.getDefaultInstance());
            return api.acquireBatch(body, -1, grant).thenApply(answer -> json(HttpResponseStatus.OK, answer));
        }
        if (path.startsWith(LEASES + "/"))
        {
            if (!method.equals(HttpMethod.DELETE))
            {
                throw new ApiProblem(Status.Code.UNIMPLEMENTED, "method", "method: " + path
                    + " takes DELETE, not " + method);
            }
            final String id = path.substring(LEASES.length() + 1);
            return api.release(ReleaseRequest.newBuilder().setLeaseId(id).build())
                .thenApply(done -> new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NO_CONTENT));
        }
        throw new ApiProblem(Status.Code.NOT_FOUND, "path", "path: no " + path + " here (" + ACQUIRE + ", "
            + BATCH + ", " + LEASES + ", DELETE " + LEASES + "/{lease_id}; docs/api.md)");
    }

    private static void requirePost(final HttpMethod method, final String path)
    {
        if (!method.equals(HttpMethod.POST))
        {
            throw new ApiProblem(Status.Code.UNIMPLEMENTED, "method", "method: " + path + " takes POST, not " + method);
        }
    }

    private static String body(final FullHttpRequest request)
    {
        final String type = request.headers().get(HttpHeaderNames.CONTENT_TYPE);
        if (type != null && !type.regionMatches(true, 0, JSON, 0, JSON.length()))
        {
            throw ApiProblem.invalid("content-type", "must be " + JSON + ", was " + type);
        }
        final byte[] bytes = new byte[request.content().readableBytes()];
        request.content().getBytes(request.content().readerIndex(), bytes);
        final java.nio.charset.CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder();
        try
        {
            return utf8.decode(java.nio.ByteBuffer.wrap(bytes)).toString();
        }
        catch (final java.nio.charset.CharacterCodingException e)
        {
            throw ApiProblem.invalid("body", "not UTF-8");
        }
    }

    private static FullHttpResponse json(final HttpResponseStatus status, final Message message)
    {
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
            Unpooled.wrappedBuffer((JsonBodies.print(message) + "\n").getBytes(StandardCharsets.UTF_8)));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        return response;
    }

    static FullHttpResponse error(final ApiProblem problem)
    {
        return json(status(problem.code()), ErrorResponse.newBuilder().setError(problem.toProto()).build());
    }

    private static HttpResponseStatus status(final Status.Code code)
    {
        return switch (code)
        {
            case INVALID_ARGUMENT -> HttpResponseStatus.BAD_REQUEST;
            case UNAUTHENTICATED -> HttpResponseStatus.UNAUTHORIZED;
            case PERMISSION_DENIED -> HttpResponseStatus.FORBIDDEN;
            case NOT_FOUND -> HttpResponseStatus.NOT_FOUND;
            case UNIMPLEMENTED -> HttpResponseStatus.METHOD_NOT_ALLOWED;
            case UNAVAILABLE -> HttpResponseStatus.SERVICE_UNAVAILABLE;
            case DEADLINE_EXCEEDED -> HttpResponseStatus.GATEWAY_TIMEOUT;
            default -> HttpResponseStatus.INTERNAL_SERVER_ERROR;
        };
    }

    @Override
    public void userEventTriggered(final ChannelHandlerContext ctx, final Object event)
    {
        if (event instanceof IdleStateEvent)
        {
            ctx.close(); // an idle keep-alive connection
        }
        else
        {
            ctx.fireUserEventTriggered(event);
        }
    }

    @Override
    public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause)
    {
        ctx.close(); // a reset connection, a failed handshake: nothing to answer
    }
}
