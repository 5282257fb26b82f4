package dev.limiter.server.admin;

import dev.limiter.server.cluster.Membership;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.net.ConnectionGuard;
import dev.limiter.server.net.Listener;
import dev.limiter.server.net.ServerTls;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.QueryStringDecoder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import javax.net.ssl.SSLException;

/**
 * The admin HTTP endpoint: its listener and connections (limits, TLS, HTTP/1.1 answered in request
 * order), handing each request to {@link OpenEndpoints} ({@code GET /metrics}, {@code /health},
 * {@code /health/live}, {@code /health/ready} and {@code /status}, open to anyone who can reach the
 * port) or to the control plane under {@code /v1/}, which needs {@code Authorization: Bearer <token>}
 * (see docs/control-plane.md and {@link AdminApi}).
 */
public final class AdminServer implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(AdminServer.class);

    private final String host;
    private final int port;
    private final NodeStatus server;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final Class<? extends ServerChannel> channelType;
    private final PolicyControl control;
    private final String token;
    private final Membership membership;
    private final ConnectionGuard.Limits limits;
    private final ServerTls tls;
    private final OpenEndpoints open;
    private Channel channel;

    /** The admin port's connection limits: at most this many, closed when idle, a request to be finished in time. */
    public record Limits(int maxConnections, long idleTimeoutMillis, long requestTimeoutMillis)
    {
    }

    public AdminServer(final String host, final int port, final ServerMetrics metrics, final NodeStatus server,
        final EventLoopGroup boss, final EventLoopGroup workers, final Class<? extends ServerChannel> channelType,
        final PolicyControl control, final String token, final Membership membership,
        final Limits limits, final ServerTls tls)
    {
        this.tls = tls;
        this.membership = membership;
        this.limits = new ConnectionGuard.Limits("admin", limits.maxConnections(), limits.idleTimeoutMillis(),
            limits.requestTimeoutMillis(), metrics, AdminServer::farewell);
        this.control = control;
        this.token = token;
        this.host = host;
        this.port = port;
        this.server = server;
        this.boss = boss;
        this.workers = workers;
        this.channelType = channelType;
        this.open = new OpenEndpoints(metrics, server);
    }

    public void start() throws InterruptedException
    {
        final ServerBootstrap bootstrap = new ServerBootstrap()
            .group(boss, workers)
            .channel(channelType)
            .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(64 * 1024, 256 * 1024))
            // A client may end its side after its request: the answer, sent once a change commits, still reaches it.
            .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
            .childHandler(new ChannelInitializer<SocketChannel>()
            {
                @Override
                protected void initChannel(final SocketChannel ch)
                {
                    final ConnectionGuard guard = new ConnectionGuard(limits, false);
                    ch.pipeline().addLast("guard", guard);
                    if (tls != null)
                    {
                        ch.pipeline().addLast("tls", tls.handler(ch, "admin"));
                    }
                    ch.pipeline()
                        .addLast(new HttpServerCodec(4096, 8192, 8192))
                        .addLast(new HttpObjectAggregator(64 * 1024))
                        .addLast(new Handler(guard));
                }
            });
        channel = Listener.bind(bootstrap, host, port, "admin port", "--admin-port");
    }

    /** The last answer to a connection this port turns away: 503 over the cap, 408 for a request left unfinished. */
    private static Object farewell(final Channel channel, final String reason, final String message)
    {
        final FullHttpResponse response = OpenEndpoints.text(reason.equals("max-connections") ? HttpResponseStatus.SERVICE_UNAVAILABLE :
            HttpResponseStatus.REQUEST_TIMEOUT, OpenEndpoints.PLAIN_TYPE, message + "\n");
        response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        return response;
    }

    public int port()
    {
        return ((InetSocketAddress)channel.localAddress()).getPort();
    }

    @Override
    public void close()
    {
        if (channel != null)
        {
            channel.close().syncUninterruptibly();
        }
    }

    private final class Handler extends SimpleChannelInboundHandler<FullHttpRequest>
    {
        private final AdminApi api = new AdminApi(control, token, server::hotKeys, server::shadowComparison, membership,
            server.rejections(), server::historyJson);
        private final ConnectionGuard guard;
        /** A request is being answered (event loop only): a change is answered once it commits. */
        private boolean answering;
        /**
         * Requests pipelined behind the one being answered: HTTP/1.1 answers in request order, so each
         * waits its turn (a read answered at once must not overtake a change waiting for its commit),
         * and the connection is not read from meanwhile. Event loop only.
         */
        private final ArrayDeque<FullHttpRequest> waiting = new ArrayDeque<>();
        /** The client ended its side ({@code shutdown(SHUT_WR)}, as nc -N does): closed once every answer is out. */
        private boolean inputEnded;

        Handler(final ConnectionGuard guard)
        {
            this.guard = guard;
        }

        @Override
        public void channelWritabilityChanged(final ChannelHandlerContext ctx) throws Exception
        {
            updateAutoRead(ctx);
            super.channelWritabilityChanged(ctx);
        }

        /**
         * A client that does not read its answers, or that has requests waiting, is not read from: memory
         * stays bounded. Once its side has ended there is nothing to read (and epoll refuses to watch it).
         */
        private void updateAutoRead(final ChannelHandlerContext ctx)
        {
            if (!inputEnded)
            {
                ctx.channel().config().setAutoRead(ctx.channel().isWritable() && waiting.isEmpty());
            }
        }

        @Override
        protected void channelRead0(final ChannelHandlerContext ctx, final FullHttpRequest request)
        {
            guard.messageFinished();
            if (answering)
            {
                waiting.add(request.retain());
                updateAutoRead(ctx);
                return;
            }
            answer(ctx, request);
        }

        @Override
        public void channelInactive(final ChannelHandlerContext ctx) throws Exception
        {
            for (FullHttpRequest request = waiting.poll(); request != null; request = waiting.poll())
            {
                request.release();
            }
            super.channelInactive(ctx);
        }

        private void answer(final ChannelHandlerContext ctx, final FullHttpRequest request)
        {
            answering = true;
            final String path;
            try
            {
                path = new QueryStringDecoder(request.uri()).path();
            }
            catch (final IllegalArgumentException e)
            {
                send(ctx, OpenEndpoints.text(HttpResponseStatus.BAD_REQUEST, OpenEndpoints.PLAIN_TYPE,
                    "malformed request path: " + e.getMessage() + " (escape '%' as %25)\n"), HttpUtil.isKeepAlive(request));
                return;
            }
            if (request.decoderResult().isSuccess() && (path.equals("/v1") || path.startsWith("/v1/")))
            {
                final boolean keepAlive = HttpUtil.isKeepAlive(request);
                api.handle(request, path, answer -> ctx.executor().execute(() -> send(ctx, answer, keepAlive)));
                return;
            }
            final FullHttpResponse response = request.decoderResult().isSuccess() ? open.answer(request, path) :
                OpenEndpoints.text(HttpResponseStatus.BAD_REQUEST, OpenEndpoints.PLAIN_TYPE,
                    "malformed HTTP request\n");
            send(ctx, response, HttpUtil.isKeepAlive(request));
        }

        @Override
        public void userEventTriggered(final ChannelHandlerContext ctx, final Object event) throws Exception
        {
            if (event instanceof ChannelInputShutdownEvent)
            {
                inputEnded = true;
                if (!answering)
                {
                    ctx.close();
                }
            }
            super.userEventTriggered(ctx, event);
        }

        private void send(final ChannelHandlerContext ctx, final FullHttpResponse response, final boolean keepAlive)
        {
            answering = false;
            if (!keepAlive || inputEnded && waiting.isEmpty())
            {
                ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            ctx.writeAndFlush(response);
            final FullHttpRequest next = waiting.poll();
            if (next != null)
            {
                try
                {
                    answer(ctx, next);
                }
                catch (final RuntimeException | LinkageError e)
                {
                    exceptionCaught(ctx, e); // from a commit's callback task too, where Netty would only log it
                }
                finally
                {
                    next.release();
                }
            }
            updateAutoRead(ctx);
        }

        /**
         * What no handler expected (a bug, or a class gone from a jar rebuilt under the running node):
         * logged with its stack, and answered 500 naming it, rather than a connection closed unanswered.
         */
        @Override
        public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause)
        {
            if (cause instanceof IOException || cause instanceof DecoderException && cause.getCause() instanceof SSLException)
            {
                ctx.close(); // the peer's doing (a reset, a failed handshake), not the node's
                return;
            }
            LOG.error("admin port: a request from {} failed unexpectedly; answered 500 and closed", ctx.channel().remoteAddress(), cause);
            if (!ctx.channel().isActive())
            {
                return;
            }
            FullHttpResponse response;
            try
            {
                response = AdminApi.error(HttpResponseStatus.INTERNAL_SERVER_ERROR, "the node failed to answer: " + cause +
                    " (its log has the stack); if this was a change, read the state back before retrying it");
            }
            catch (final RuntimeException | LinkageError e)
            {
                response = OpenEndpoints.text(HttpResponseStatus.INTERNAL_SERVER_ERROR, OpenEndpoints.PLAIN_TYPE,
                    "the node failed to answer (its log has the stack)\n");
            }
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
