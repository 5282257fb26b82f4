package dev.limiter.envoy;

import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.ReloadingTls;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.ClientAuth;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A gRPC server answering Envoy's rate limit service with a {@link RateLimitGateway}, and the SDK
 * client it asks, on the same event loops: a call read on a loop is batched and written to the
 * store by that loop, and the store's answer goes back to Envoy from it, with no hand-off between
 * threads. What a client may hold or send is bounded: at most {@link Port#maxConnections()}
 * connections, small messages, few concurrent calls per connection, idle connections closed,
 * keepalive pings no more often than Envoy's own. Optionally TLS (server-only or mutual), its files
 * followed on disk. The standard gRPC health service ({@code grpc.health.v1.Health}) answers
 * SERVING once the SDK holds a policy set, NOT_SERVING before and from the start of shutdown.
 */
public final class RlsServer implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(RlsServer.class);

    /**
     * Connections served at once by default. Envoy sends every call of a worker thread over one
     * HTTP/2 connection per gateway, so a gateway sees about (Envoys x workers) connections: 1,000
     * serves 125 eight-worker Envoys. An idle connection costs little heap (docs/envoy.md), so the
     * cap is not about idle ones: it bounds the file descriptors and the calls in flight (up to
     * {@link #MAX_CALLS_PER_CONNECTION} each) that connections can hold in a gateway whose heap is
     * 512 MiB, ten times fewer than a node's data port takes. Raise it for a mesh of sidecars.
     */
    public static final int DEFAULT_MAX_CONNECTIONS = 1_000;
    /** The service name Envoy's (and Kubernetes') gRPC health checks may ask about, besides "" (the server). */
    public static final String SERVICE = "envoy.service.ratelimit.v3.RateLimitService";

    /**
     * The gateway's port: how many connections it serves, and its TLS.
     *
     * @param maxConnections connections served at once; more are closed at once and counted
     * @param tls            the port's certificate and key, and the CA bundle clients' certificates come from; null: plaintext
     * @param clientAuth     whether clients must (REQUIRE), may (OPTIONAL) or need not (NONE) present a certificate from the bundle
     * @param storeTls       the TLS files of the SDK's connections to the store (the same as the SDK builder's), followed like
     *                       {@code tls}; or null
     * @param reloadEvery    how often the TLS files are checked; zero: read at start only
     */
    public record Port(int maxConnections, ReloadingTls tls, ClientAuth clientAuth, ReloadingTls storeTls, Duration reloadEvery)
    {
        /** Plaintext, {@link #DEFAULT_MAX_CONNECTIONS}. */
        public static final Port PLAINTEXT = new Port(DEFAULT_MAX_CONNECTIONS, null, ClientAuth.NONE, null, Duration.ZERO);

        public Port
        {
            if (maxConnections < 1 || maxConnections > 1_000_000)
            {
                throw new IllegalArgumentException("--max-connections must be 1 to 1000000, was " + maxConnections);
            }
            Objects.requireNonNull(clientAuth, "clientAuth");
            Objects.requireNonNull(reloadEvery, "reloadEvery");
        }
    }

    /** Largest request accepted, in bytes (a request of 64 descriptors of five long entries fits). */
    public static final int MAX_REQUEST_BYTES = 256 * 1024;
    /**
     * Calls one connection may have in flight. Envoy multiplexes a worker's calls over one connection
     * and opens another when a server's stream limit is reached; 1,000 calls within Envoy's 20 ms
     * timeout are 50,000 calls a second on one connection. Each unfinished call may buffer a request
     * up to {@link #MAX_REQUEST_BYTES}, so this bounds what one connection can make the gateway hold.
     */
    public static final int MAX_CALLS_PER_CONNECTION = 1_000;
    /** A connection with no call for this long is closed. */
    public static final Duration MAX_IDLE = Duration.ofMinutes(10);

    private final Server server;
    private final RateLimitGateway gateway;
    private final LimiterClient client;
    private final IoEventLoopGroup loops;
    private final RlsPortGuard guard;
    private final HealthStatusManager health;
    private final Port port;
    private final AtomicLong tlsReloaded = new AtomicLong();
    private final AtomicLong tlsFailed = new AtomicLong();

    private RlsServer(final Server server, final RateLimitGateway gateway, final LimiterClient client, final IoEventLoopGroup loops,
        final RlsPortGuard guard, final HealthStatusManager health, final Port port)
    {
        this.server = server;
        this.gateway = gateway;
        this.client = client;
        this.loops = loops;
        this.guard = guard;
        this.health = health;
        this.port = port;
    }

    /** {@link #start(LimiterClient.Builder, int, InetSocketAddress, Duration, boolean, Port)} on a plaintext port. */
    public static RlsServer start(final LimiterClient.Builder client, final int ioThreads, final InetSocketAddress address,
        final Duration deadline, final boolean responseHeaders)
    {
        return start(client, ioThreads, address, deadline, responseHeaders, Port.PLAINTEXT);
    }

    /**
     * Builds the client on the gateway's event loops and starts serving on {@code address} (port 0:
     * any free port, see {@link #port()}).
     *
     * @param client          the SDK client's settings (its event loops are the gateway's)
     * @param ioThreads       event loop threads shared by the gRPC server and the client (1 is plenty for tens of thousands of calls a second)
     * @param deadline        the longest a request waits for the store (Envoy's filter times out at 20 ms by default)
     * @param responseHeaders add RateLimit, RateLimit-Policy and Retry-After headers to Envoy's response
     * @param port            the port's connection cap and TLS
     * @throws UncheckedIOException when the address cannot be bound
     * @throws IllegalArgumentException when no TLS context can be made of the port's files
     */
    public static RlsServer start(final LimiterClient.Builder client, final int ioThreads, final InetSocketAddress address,
        final Duration deadline, final boolean responseHeaders, final Port port)
    {
        final RlsPortGuard guard = new RlsPortGuard(port.maxConnections(), port.tls(), port.clientAuth());
        final boolean epoll = Epoll.isAvailable();
        final IoEventLoopGroup loops = new MultiThreadIoEventLoopGroup(ioThreads, new DefaultThreadFactory("limiter-rls", true),
            epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        LimiterClient built = null;
        try
        {
            built = client.eventLoops(loops).build();
            final RateLimitGateway gateway = new RateLimitGateway(built, deadline, responseHeaders);
            final HealthStatusManager health = new HealthStatusManager();
            final Server server = NettyServerBuilder.forAddress(bindable(address))
                .bossEventLoopGroup(loops)
                .workerEventLoopGroup(loops)
                .channelType(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
                .protocolNegotiator(guard)
                .addService(gateway)
                .addService(health.getHealthService())
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
            final RlsServer started = new RlsServer(server, gateway, built, loops, guard, health, port);
            started.serveWhenPoliciesAreHeld();
            started.follow(port.tls(), "the gateway's port");
            started.follow(port.storeTls(), "connections to the store");
            return started;
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

    /** SERVING from the first policy set the SDK holds (fetched, pushed, or restored from its store) until shutdown. */
    private void serveWhenPoliciesAreHeld()
    {
        setStatus(ServingStatus.NOT_SERVING);
        client.policies().onChange(set -> setStatus(ServingStatus.SERVING));
        if (client.policies().version() > 0)
        {
            setStatus(ServingStatus.SERVING);
        }
    }

    private void setStatus(final ServingStatus status)
    {
        health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, status);
        health.setStatus(SERVICE, status);
    }

    /** Logs and counts the checks of {@code tls}'s files, and checks them every {@link Port#reloadEvery()}. */
    private void follow(final ReloadingTls tls, final String what)
    {
        if (tls == null)
        {
            return;
        }
        tls.listener((outcome, detail) ->
        {
            if (outcome == ReloadingTls.Outcome.RELOADED)
            {
                tlsReloaded.incrementAndGet();
                LOG.info("TLS: new {} now use {}", what, detail);
            }
            else
            {
                tlsFailed.incrementAndGet();
                LOG.warn("TLS: the changed files of {} do not load: {}", what, detail);
            }
        });
        if (!port.reloadEvery().isZero())
        {
            tls.watch(port.reloadEvery());
        }
    }

    /**
     * Checks the TLS files of the port and of the store connections now (as the timer does): new
     * handshakes use changed files that load; files that do not are logged, counted and ignored.
     *
     * @return RELOADED if either reloaded, else FAILED if either failed, else UNCHANGED
     */
    public ReloadingTls.Outcome reloadTls()
    {
        final ReloadingTls.Outcome ours = port.tls() == null ? ReloadingTls.Outcome.UNCHANGED : port.tls().reload();
        final ReloadingTls.Outcome store = port.storeTls() == null ? ReloadingTls.Outcome.UNCHANGED : port.storeTls().reload();
        return ours == ReloadingTls.Outcome.RELOADED || store == ReloadingTls.Outcome.RELOADED ? ReloadingTls.Outcome.RELOADED :
            ours == ReloadingTls.Outcome.FAILED || store == ReloadingTls.Outcome.FAILED ? ReloadingTls.Outcome.FAILED : ReloadingTls.Outcome.UNCHANGED;
    }

    /** The port's settings. */
    public Port settings()
    {
        return port;
    }

    /** Connections closed at once because the port had {@link Port#maxConnections()} open. */
    public long refusedOverCap()
    {
        return guard.refusedOverCap();
    }

    /** TLS connections closed before their handshake completed. */
    public long failedHandshakes()
    {
        return guard.failedHandshakes();
    }

    /** Connections open now. */
    public int openConnections()
    {
        return guard.open();
    }

    /** Changed TLS files loaded (the port's or the store connections'). */
    public long tlsReloaded()
    {
        return tlsReloaded.get();
    }

    /** Whether the port's or the store connections' TLS files have changed and do not load (the previous ones are used). */
    public boolean tlsRefusing()
    {
        return port.tls() != null && port.tls().refusing() || port.storeTls() != null && port.storeTls().refusing();
    }

    /** Changed TLS files that did not load, the previous ones kept. */
    public long tlsFailed()
    {
        return tlsFailed.get();
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

    /**
     * Answers NOT_SERVING to health checks from now on, stops taking calls, waits up to 5 s for
     * those in flight, then closes the client and the event loops.
     */
    @Override
    public void close()
    {
        health.enterTerminalState();
        for (final ReloadingTls tls : new ReloadingTls[] {port.tls(), port.storeTls()})
        {
            if (tls != null)
            {
                tls.close();
            }
        }
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
