package dev.limiter.envoy.api;

import dev.limiter.client.LimiterClient;
import dev.limiter.envoy.RlsPortGuard;
import dev.limiter.envoy.RlsServer;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.NettyServerBuilder;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

/**
 * {@code ./limiter api}: {@code limiter.v1.RateLimiter} on a gRPC port and an HTTP/JSON port, both
 * answered by one {@link DecisionApi} over one SDK client, all on the same event loops (as the
 * Envoy gateway, {@link RlsServer}, runs). Both ports authenticate every request (a bearer token,
 * a client certificate under mutual TLS, or both), cap their connections, bound what one request
 * may hold (message and body sizes, headers, one HTTP request in flight per connection, concurrent
 * gRPC calls per connection) and close idle connections.
 */
public final class ApiServer implements AutoCloseable
{
    /** Largest gRPC message or HTTP body accepted, in bytes (a batch of 64 items with long fields fits). */
    public static final int MAX_REQUEST_BYTES = 64 * 1024;
    /** Largest HTTP request line and header block, in bytes. */
    static final int MAX_HTTP_LINE_BYTES = 4096;
    static final int MAX_HTTP_HEADER_BYTES = 8192;
    /** gRPC calls one connection may have in flight (as the Envoy gateway's port). */
    public static final int MAX_CALLS_PER_CONNECTION = RlsServer.MAX_CALLS_PER_CONNECTION;
    /** A connection with no request for this long is closed. */
    public static final Duration MAX_IDLE = Duration.ofMinutes(2);
    /** From its first byte, an HTTP request must arrive whole within this, or its connection closes. */
    public static final Duration MAX_REQUEST_TIME = Duration.ofSeconds(10);

    /**
     * Where and how the API is served.
     *
     * @param grpc     the gRPC port's address (port 0: any free one)
     * @param http     the HTTP port's address, or null for none
     * @param deadline the longest a decision waits for the store
     * @param tokens   the bearer tokens accepted, or null when the ports authenticate by client certificate only
     * @param port     connection cap and TLS of each port (the store's TLS for the SDK too), as the Envoy gateway's
     */
    public record Settings(InetSocketAddress grpc, InetSocketAddress http, Duration deadline, BearerTokens tokens,
        RlsServer.Port port)
    {
        public Settings
        {
            Objects.requireNonNull(grpc, "grpc");
            Objects.requireNonNull(deadline, "deadline");
            Objects.requireNonNull(port, "port");
            if (tokens == null && (port.tls() == null || port.clientAuth() != ClientAuth.REQUIRE))
            {
                throw new IllegalArgumentException("the API authenticates every caller: give --token-file, or " +
                    "--tls-cert, --tls-key, " +
                    "--tls-ca and --tls-client-auth require (or both)");
            }
        }
    }

    private final IoEventLoopGroup loops;
    private final LimiterClient client;
    private final DecisionApi api;
    private final Server grpc;
    private final RlsPortGuard grpcGuard;
    private final Channel http;
    private final HttpPortGate httpGate;
    private final Settings settings;

    private ApiServer(final IoEventLoopGroup loops, final LimiterClient client, final DecisionApi api,
        final Server grpc, final RlsPortGuard grpcGuard, final Channel http, final HttpPortGate httpGate,
        final Settings settings)
    {
        this.loops = loops;
        this.client = client;
        this.api = api;
        this.grpc = grpc;
        this.grpcGuard = grpcGuard;
        this.http = http;
        this.httpGate = httpGate;
        this.settings = settings;
    }

    /**
     * Builds the client on the server's event loops and starts both ports.
     *
     * @param ioThreads event loop threads shared by both ports and the client
     * @throws UncheckedIOException when an address cannot be bound
     * @throws IllegalArgumentException when no TLS context can be made of the port's files
     */
    public static ApiServer start(final LimiterClient.Builder clientSettings, final int ioThreads,
        final Settings settings)
    {
        final boolean epoll = Epoll.isAvailable();
        final IoEventLoopGroup loops = new MultiThreadIoEventLoopGroup(ioThreads,
            new DefaultThreadFactory("limiter-api", true), epoll ? EpollIoHandler.newFactory()
            : NioIoHandler.newFactory());
        LimiterClient client = null;
        Server grpc = null;
        try
        {
            client = clientSettings.eventLoops(loops).build();
            final DecisionApi api = new DecisionApi(client, settings.deadline());
            final RlsServer.Port port = settings.port();
            final RlsPortGuard grpcGuard = new RlsPortGuard(port.maxConnections(), port.tls(), port.clientAuth());
            final ApiGrpcService service = new ApiGrpcService(api);
            grpc = NettyServerBuilder.forAddress(bindable(settings.grpc()))
                .bossEventLoopGroup(loops)
                .workerEventLoopGroup(loops)
                .channelType(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
                .protocolNegotiator(grpcGuard)
                .addService(settings.tokens() == null ? service.bindService() : ServerInterceptors.intercept(service,
                    settings.tokens()))
                .directExecutor() // handlers hand work to the SDK and return
                .maxInboundMessageSize(MAX_REQUEST_BYTES)
                .maxInboundMetadataSize(8 * 1024)
                .maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION)
                .maxConnectionIdle(MAX_IDLE.toSeconds(), TimeUnit.SECONDS)
                .permitKeepAliveTime(10, TimeUnit.SECONDS)
                .permitKeepAliveWithoutCalls(true)
                .build();
            try
            {
                grpc.start();
            }
            catch (final IOException e)
            {
                throw new UncheckedIOException("cannot serve the API's gRPC port on " + settings.grpc() + ": "
                    + e.getMessage() + " (choose another --grpc-listen)", e);
            }
            final HttpPortGate httpGate = new HttpPortGate(port.maxConnections());
            final Channel http = settings.http() == null ? null :
                serveHttp(loops, epoll, settings, api, httpGate, sslContext(port));
            final ApiServer started = new ApiServer(loops, client, api, grpc, grpcGuard, http, httpGate, settings);
            if (port.tls() != null && !port.reloadEvery().isZero())
            {
                port.tls().watch(port.reloadEvery());
            }
            return started;
        }
        catch (final RuntimeException e)
        {
            if (grpc != null)
            {
                grpc.shutdownNow();
            }
            if (client != null)
            {
                client.close();
            }
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    private static SslContext sslContext(final RlsServer.Port port)
    {
        if (port.tls() == null)
        {
            return null;
        }
        // The key and trust managers follow the files as they are reloaded.
        final SslContextBuilder builder = SslContextBuilder.forServer(port.tls().keyManager())
            .clientAuth(port.clientAuth());
        if (port.tls().trustManager() != null)
        {
            builder.trustManager(port.tls().trustManager());
        }
        try
        {
            return builder.build();
        }
        catch (final SSLException e)
        {
            throw new IllegalArgumentException("cannot set up TLS on the API's HTTP port: " + e.getMessage(), e);
        }
    }

    private static Channel serveHttp(final IoEventLoopGroup loops, final boolean epoll, final Settings settings,
        final DecisionApi api, final HttpPortGate gate, final SslContext tls)
    {
        final ServerBootstrap bootstrap = new ServerBootstrap().group(loops)
            .channel(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childHandler(new ChannelInitializer<SocketChannel>()
            {
                @Override
                protected void initChannel(final SocketChannel channel)
                {
                    channel.pipeline().addLast(gate);
                    if (tls != null)
                    {
                        channel.pipeline().addLast(tls.newHandler(channel.alloc()));
                    }
                    channel.pipeline().addLast(new RequestDeadline(MAX_REQUEST_TIME),
                        new HttpServerCodec(MAX_HTTP_LINE_BYTES, MAX_HTTP_HEADER_BYTES, 8192),
                        new HttpObjectAggregator(MAX_REQUEST_BYTES),
                        new IdleStateHandler(0, 0, MAX_IDLE.toSeconds(), TimeUnit.SECONDS),
                        new ApiHttpHandler(api, settings.tokens()));
                }
            });
        try
        {
            return bootstrap.bind(bindable(settings.http())).sync().channel();
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while binding the API's HTTP port", e);
        }
        catch (final RuntimeException e)
        {
            throw new UncheckedIOException("cannot serve the API's HTTP port on " + settings.http() + ": "
                + e.getMessage() + " (choose another --http-listen)", new IOException(e));
        }
    }

    private static InetSocketAddress bindable(final InetSocketAddress address)
    {
        return address.isUnresolved() ? new InetSocketAddress(address.getHostString(), address.getPort()) : address;
    }

    /** The gRPC port. */
    public int grpcPort()
    {
        return grpc.getPort();
    }

    /** The HTTP port, or -1 when none is served. */
    public int httpPort()
    {
        return http == null ? -1 : ((InetSocketAddress)http.localAddress()).getPort();
    }

    public DecisionApi api()
    {
        return api;
    }

    /** The SDK client the API asks (closed with the server). */
    public LimiterClient client()
    {
        return client;
    }

    public Settings settings()
    {
        return settings;
    }

    /** Connections closed at once because a port had its cap open (gRPC and HTTP). */
    public long refusedOverCap()
    {
        return grpcGuard.refusedOverCap() + httpGate.refusedOverCap();
    }

    /** Requests and calls refused for a missing or wrong token. */
    public long unauthenticated()
    {
        return settings.tokens() == null ? 0 : settings.tokens().refused();
    }

    /** Stops taking calls, waits up to 5 s for those in flight, then closes the client and the event loops. */
    @Override
    public void close()
    {
        if (settings.port().tls() != null)
        {
            settings.port().tls().close();
        }
        if (http != null)
        {
            http.close().syncUninterruptibly();
        }
        grpc.shutdown();
        try
        {
            if (!grpc.awaitTermination(5, TimeUnit.SECONDS))
            {
                grpc.shutdownNow();
            }
        }
        catch (final InterruptedException e)
        {
            grpc.shutdownNow();
            Thread.currentThread().interrupt();
        }
        finally
        {
            client.close();
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
