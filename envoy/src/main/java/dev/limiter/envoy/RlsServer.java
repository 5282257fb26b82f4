package dev.limiter.envoy;

import dev.limiter.client.LimiterClient;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A gRPC server answering Envoy's rate limit service with a {@link RateLimitGateway}. What a
 * client may hold or send is bounded: small messages, few concurrent calls per connection, idle
 * connections closed, keepalive pings no more often than Envoy's own.
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

    private RlsServer(final Server server, final RateLimitGateway gateway)
    {
        this.server = server;
        this.gateway = gateway;
    }

    /**
     * Starts serving on {@code address} (port 0: any free port, see {@link #port()}).
     *
     * @param client          asks the store; not closed by {@link #close()}
     * @param deadline        the longest a request waits for the store (Envoy's filter times out at 20 ms by default)
     * @param responseHeaders add RateLimit, RateLimit-Policy and Retry-After headers to Envoy's response
     * @throws UncheckedIOException when the address cannot be bound
     */
    public static RlsServer start(final LimiterClient client, final InetSocketAddress address, final Duration deadline,
        final boolean responseHeaders)
    {
        final RateLimitGateway gateway = new RateLimitGateway(client, deadline, responseHeaders);
        final InetSocketAddress bind = address.isUnresolved() ? new InetSocketAddress(address.getHostString(), address.getPort()) : address;
        final Server server = NettyServerBuilder.forAddress(bind)
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
        return new RlsServer(server, gateway);
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

    /** Stops taking calls and waits up to 5 s for those in flight. */
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
    }
}
