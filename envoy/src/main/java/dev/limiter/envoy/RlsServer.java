package dev.limiter.envoy;

import dev.limiter.client.LimiterClient;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A gRPC server answering Envoy's rate limit service with a {@link RateLimitGateway}, and the SDK
 * client it asks, on the same event loops: a call read on a loop is batched and written to the
 * store by that loop, and the store's answer goes back to Envoy from it, with no hand-off between
 * threads. What a client may hold or send is bounded: small messages, few concurrent calls per
 * connection, idle connections closed, keepalive pings no more often than Envoy's own.
 */
public final class RlsServer implements AutoCloseable
{
    /** Largest request accepted, in bytes (a request of 64 descriptors of five long entries fits). */
    public static final int MAX_REQUEST_BYTES = 256 * 1024;
    /** Calls one connection may have in flight (Envoy multiplexes every worker's calls over few connections). */
    public static final int MAX_CALLS_PER_CONNECTION = 10_000;
    /** A connection with no call for this long is closed. */
    public static final Duration MAX_IDLE = Duration.ofMinutes(10);

    private final Server server;
    private final RateLimitGateway gateway;
    private final LimiterClient client;
    private final IoEventLoopGroup loops;

    private RlsServer(final Server server, final RateLimitGateway gateway, final LimiterClient client, final IoEventLoopGroup loops)
    {
        this.server = server;
        this.gateway = gateway;
        this.client = client;
        this.loops = loops;
    }

    /**
     * Builds the client on the gateway's event loops and starts serving on {@code address} (port 0:
     * any free port, see {@link #port()}).
     *
     * @param client          the SDK client's settings (its event loops are the gateway's)
     * @param ioThreads       event loop threads shared by the gRPC server and the client (1 is plenty for tens of thousands of calls a second)
     * @param deadline        the longest a request waits for the store (Envoy's filter times out at 20 ms by default)
     * @param responseHeaders add RateLimit, RateLimit-Policy and Retry-After headers to Envoy's response
     * @throws UncheckedIOException when the address cannot be bound
     */
    public static RlsServer start(final LimiterClient.Builder client, final int ioThreads, final InetSocketAddress address,
        final Duration deadline, final boolean responseHeaders)
    {
        final boolean epoll = Epoll.isAvailable();
        final IoEventLoopGroup loops = new MultiThreadIoEventLoopGroup(ioThreads, new DefaultThreadFactory("limiter-rls", true),
            epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        LimiterClient built = null;
        try
        {
            built = client.eventLoops(loops).build();
            final RateLimitGateway gateway = new RateLimitGateway(built, deadline, responseHeaders);
            final Server server = NettyServerBuilder.forAddress(bindable(address))
                .bossEventLoopGroup(loops)
                .workerEventLoopGroup(loops)
                .channelType(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
                .addService(gateway)
                // Handlers only hand work to the SDK and return: no hop to another executor.
                .directExecutor()
                .maxInboundMessageSize(MAX_REQUEST_BYTES)
                .maxInboundMetadataSize(16 * 1024)
                .maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION)
                .maxConnectionIdle(MAX_IDLE.toSeconds(), TimeUnit.SECONDS)
                .permitKeepAliveTime(10, TimeUnit.SECONDS)
                .permitKeepAliveWithoutCalls(true)
                .build();
            try
            {
                server.start();
            }
            catch (final IOException e)
            {
                throw new UncheckedIOException("cannot serve Envoy's rate limit service on " + address.getHostString() + ":" +
                    address.getPort() + ": " + e.getMessage() + " (choose another --listen port)", e);
            }
            return new RlsServer(server, gateway, built, loops);
        }
        catch (final RuntimeException e)
        {
            if (built != null)
            {
                built.close();
            }
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    /** A listen address as {@link dev.limiter.protocol.HostPort#parse} gives it (unresolved), resolved so that it can be bound. */
    static InetSocketAddress bindable(final InetSocketAddress address)
    {
        return address.isUnresolved() ? new InetSocketAddress(address.getHostString(), address.getPort()) : address;
    }

    /** The port it listens on. */
    public int port()
    {
        return server.getPort();
    }

    public RateLimitGateway gateway()
    {
        return gateway;
    }

    /** The SDK client the gateway asks (closed with the server). */
    public LimiterClient client()
    {
        return client;
    }

    /** Stops taking calls, waits up to 5 s for those in flight, then closes the client and the event loops. */
    @Override
    public void close()
    {
        server.shutdown();
        try
        {
            if (!server.awaitTermination(5, TimeUnit.SECONDS))
            {
                server.shutdownNow();
            }
        }
        catch (final InterruptedException e)
        {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
        finally
        {
            client.close();
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
