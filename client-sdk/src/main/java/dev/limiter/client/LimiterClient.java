package dev.limiter.client;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HostPort;
import dev.limiter.protocol.LeaseToken;
import dev.limiter.protocol.Pem;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.policy.FailureMode;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContext;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import javax.net.ssl.SSLContext;

/**
 * The limiter SDK: asks the store whether a request may go ahead.
 *
 * <pre>{@code
 * try (LimiterClient limiter = LimiterClient.builder().endpoints("127.0.0.1:7400").build()) {
 *     Decision d = limiter.acquireBlocking(Descriptor.of("acme", "/v1/orders/42"), 1);
 *     if (!d.allowed()) { respond 429 with RateLimitHeaders.of(d) }
 * }
 * }</pre>
 *
 * Thread-safe. Concurrent calls are batched into BATCH_ACQUIRE frames automatically and many
 * frames are in flight per connection. Every call has a deadline; a call that cannot be answered
 * fails with {@link LimiterTimeoutException} (no answer in time) or
 * {@link LimiterUnavailableException} (no open connection), or is decided locally when the
 * matched policy says how. Connections that drop are re-opened in the background with jittered
 * backoff. Futures complete on the SDK's threads: do not block in their callbacks (use the
 * {@code *Async} variants with your own executor for slow work).
 *
 * <p>This class is the public API and its {@link Builder}; each call takes the client's
 * {@link CallPath}, and the parts are built and owned by a {@link ClientContext}.
 */
public final class LimiterClient implements AutoCloseable
{
    /**
     * Default per-call deadline: a caller waits at most this long on a dead or slow store (past it
     * the SDK decides locally). Set it for the cluster and load you run (docs/sdk.md).
     */
    public static final Duration DEFAULT_DEADLINE = Duration.ofMillis(20);
    public static final int DEFAULT_CONNECTIONS_PER_ENDPOINT = 2;
    /** How long past its deadline a blocking call waits for the SDK's deadline timer before looking whether it is stuck, ms. */
    public static final long BLOCKING_SLACK_MILLIS = BlockingWait.SLACK_MILLIS;
    public static final int DEFAULT_MAX_BATCH = 256;
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(1);
    /** How long {@link Builder#build()} waits, at most, for a connection and the policy set. */
    public static final Duration DEFAULT_STARTUP_TIMEOUT = Duration.ofSeconds(2);
    /** Default time a policy set stays usable without a node confirming it. */
    public static final Duration DEFAULT_POLICY_TTL = Duration.ofMinutes(5);
    /** A connection that sent nothing for this long pings its node (nodes close connections silent for 120 s by default). */
    public static final Duration DEFAULT_KEEP_ALIVE = Duration.ofSeconds(30);

    private final ClientContext context;
    private final CallPath path;
    private final long deadlineNanos;

    private LimiterClient(final ClientContext context)
    {
        this.context = context;
        this.path = context.path;
        this.deadlineNanos = context.deadlineNanos;
    }

    public static Builder builder()
    {
        return new Builder();
    }

    /** Notified when the cluster is unreachable for a policy that pages (fail-closed ones always do). */
    @FunctionalInterface
    public interface OutageListener
    {
        /**
         * @param policyId the policy decided locally
         * @param mode     its failure mode (CLOSED: requests are being refused)
         * @param message  one line for the page
         */
        void outage(String policyId, FailureMode mode, String message);
    }

    /** Asks for one token with the default deadline. */
    public CompletableFuture<Decision> acquire(final Descriptor descriptor)
    {
        return acquire(descriptor, 1);
    }

    /**
     * Asks for {@code cost} tokens for {@code descriptor}, with the client's default deadline.
     *
     * @param cost tokens, at least 1
     * @return completes with the decision, or exceptionally with a {@link LimiterException}
     */
    public CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost)
    {
        return path.acquire(descriptor, checkCost(cost), cost, deadlineNanos);
    }

    /**
     * As {@link #acquire(Descriptor, int)} with a deadline for this call.
     *
     * @throws IllegalArgumentException when the deadline is not positive or longer than an hour
     */
    public CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost, final Duration deadline)
    {
        return path.acquire(descriptor, checkCost(cost), cost, Builder.checkDeadline(deadline).toNanos());
    }

    /**
     * Asks whether {@code descriptor}'s limits have a token now, charging nothing: allowed when a
     * request of one token would be (every scope it would be charged against has one), with what
     * is left as it is. A check takes no lease and never takes a token block. When no node
     * answers in time it is decided locally as a call would be (an emergency budget is looked at,
     * not spent; fail-closed policies refuse).
     */
    public CompletableFuture<Decision> check(final Descriptor descriptor)
    {
        return path.acquire(descriptor, 0, 0, deadlineNanos);
    }

    /** As {@link #check(Descriptor)} with a deadline for this call. */
    public CompletableFuture<Decision> check(final Descriptor descriptor, final Duration deadline)
    {
        return path.acquire(descriptor, 0, 0, Builder.checkDeadline(deadline).toNanos());
    }

    /**
     * Blocking form of {@link #acquire(Descriptor, int)}. It returns by the call's deadline plus
     * about a millisecond: the SDK's deadline timer ends the call then, whatever its I/O threads
     * are doing, and decides it locally when the policy says how. After a pause of this process
     * (a GC) a call due during it gets a few more milliseconds for an answer that arrived meanwhile
     * to be read. Should even the timer be stuck, the call fails on the caller's thread
     * {@value #BLOCKING_SLACK_MILLIS} + 40 ms past the deadline.
     *
     * <p>Under a WAIT policy the node may allow a request against tokens that exist only a little
     * later ({@link ReasonCode#RESERVED}): this method then parks the calling thread for that
     * wait ({@link Decision#waitNanos()}, at most the policy's {@code maxWait}) before returning,
     * so the caller simply goes ahead when it returns.
     *
     * @throws LimiterException when no decision arrives within the deadline or no node is reachable,
     *                          and the SDK cannot decide locally, or when the thread is interrupted
     *                          while it waits for reserved tokens
     */
    public Decision acquireBlocking(final Descriptor descriptor, final int cost)
    {
        final Decision decision = path.acquireBlocking(descriptor, checkCost(cost), cost, deadlineNanos);
        final long wait = decision.waitNanos();
        if (wait > 0)
        {
            // Reserved tokens exist only after the wait: no retry, no race with other callers.
            final long until = System.nanoTime() + wait;
            for (long left = wait; left > 0; left = until - System.nanoTime())
            {
                LockSupport.parkNanos(this, left);
                if (Thread.interrupted())
                {
                    Thread.currentThread().interrupt();
                    throw new LimiterException("interrupted while waiting " + Duration.ofNanos(wait) +
                        " for tokens reserved by policy " + decision.policyId() + " (they stay charged)");
                }
            }
        }
        return decision;
    }

    private static int checkCost(final int cost)
    {
        if (cost < 1)
        {
            throw new IllegalArgumentException("cost must be at least 1 token, was " + cost + " (to ask without charging, use check)");
        }
        return cost;
    }

    /** {@link #acquireLease(Descriptor, int)} with a cost of 1. */
    public Lease acquireLease(final Descriptor descriptor)
    {
        return acquireLease(descriptor, 1);
    }

    /**
     * Asks as {@link #acquireBlocking} does; when a concurrency limit ({@code maxConcurrent})
     * grants it, the grant holds a lease that counts against that limit until the returned
     * {@link Lease} is closed (or expires after the policy's {@code leaseTtl}). Use it in a
     * try-with-resources block; for other policies the lease is empty and closing it does nothing.
     *
     * @throws LimiterException as {@link #acquireBlocking} does
     */
    public Lease acquireLease(final Descriptor descriptor, final int cost)
    {
        final Decision decision = acquireBlocking(descriptor, cost);
        return new Lease(this, decision, descriptor.encoded(), cost, context.router.leaderFor(descriptor));
    }

    /**
     * The non-blocking form of {@link #acquireLease(Descriptor, int)}, for callers on event loops
     * (the gateways): completes with the lease when the store answers. Unlike the blocking form it
     * does not wait out a WAIT policy's reservation: when {@link Decision#waitNanos()} is positive
     * the caller goes ahead only after that wait.
     *
     * @param cost tokens, at least 1
     * @return completes with the lease (held when a concurrency limit granted it), or exceptionally
     * with a {@link LimiterException}
     */
    public CompletableFuture<Lease> acquireLeaseAsync(final Descriptor descriptor, final int cost, final Duration deadline)
    {
        return acquire(descriptor, cost, deadline)
            .thenApply(decision -> new Lease(this, decision, descriptor.encoded(), cost, context.router.leaderFor(descriptor)));
    }

    /**
     * Gives back a lease by its printable id ({@link Lease#id()}, or what {@code ./limiter acquire
     * --lease} printed), from any process.
     *
     * @return completes when a node has applied the release (a lease that had expired frees
     * nothing), or exceptionally with a {@link LimiterException}
     * @throws IllegalArgumentException when {@code leaseId} is not a lease id
     */
    public CompletableFuture<Void> release(final String leaseId)
    {
        return release(LeaseToken.parse(leaseId), "");
    }

    CompletableFuture<Void> release(final LeaseToken lease, final String leaderHint)
    {
        return context.releases.release(lease, leaderHint, deadlineNanos);
    }

    /** A lease's release failed: it counts until it expires. */
    void releaseFailed(final LeaseToken lease, final Throwable cause)
    {
        context.releases.failed(lease, cause);
    }

    /** The client's default deadline, ns. */
    long deadlineNanos()
    {
        return deadlineNanos;
    }

    /** Round-trips a PING on every open connection; completes when all answered. */
    public CompletableFuture<Void> ping()
    {
        return new Startup(context).pingAll(System.nanoTime() + deadlineNanos);
    }

    /** Waits until at least one connection is open; true if one is. */
    public boolean awaitConnected(final Duration timeout) throws InterruptedException
    {
        final long end = System.nanoTime() + timeout.toNanos();
        while (context.connections.pick() == null)
        {
            if (System.nanoTime() - end > 0)
            {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }

    /**
     * The cluster's policy set as this client holds it: fetched when a connection opens, pushed
     * by the node within moments of every change, usable for the TTL after a node last confirmed
     * it (see {@link Builder#policyTtl}). Empty until the first set arrives, and when following
     * policies is off.
     */
    public PolicyCache policies()
    {
        return context.policies;
    }

    /** What this client has seen so far and its state now, read at this moment (allocates one record). */
    public ClientStats stats()
    {
        final ClientContext c = context;
        return new ClientStats(
            c.connections.open(),
            c.circuit.openLanes(),
            c.router.routes(),
            c.epoll,
            c.resender.redirectedFrames(),
            c.resender.overloadedFrames(),
            c.rejections == null ? 0 : c.rejections.count(),
            c.local == null ? 0 : c.local.rampRefusals(),
            c.circuit.degradedTime(),
            c.outageReports.reported(),
            c.blocks == null ? 0 : c.blocks.leased(),
            c.blocks == null ? 0 : c.blocks.used(),
            c.blocks == null ? 0 : c.blocks.lapsed(),
            c.releases.failures(),
            c.connections.fleetInstances(),
            c.blockingWait.lateDeadlines(),
            c.deadlines.pauses(),
            c.circuit.pausedTimeouts());
    }

    /** The local-decision counters, for {@link LimiterMetrics}; null when local decisions are off. */
    LocalFallback localFallback()
    {
        return context.local;
    }

    /** Frames sent and neither answered nor dropped yet, over every connection (asks each I/O thread; for tests). */
    int framesAwaitingAnswer()
    {
        int frames = 0;
        for (final Connection connection : context.connections.all())
        {
            frames += connection.framesAwaitingAnswer();
        }
        return frames;
    }

    /** Closes every connection; calls still waiting fail with {@link LimiterUnavailableException}. */
    @Override
    public void close()
    {
        context.close();
    }

    /** Settings for a {@link LimiterClient}; every one has a default. */
    public static final class Builder
    {
        final List<InetSocketAddress> endpoints = new ArrayList<>();
        Duration deadline = DEFAULT_DEADLINE;
        int connectionsPerEndpoint = DEFAULT_CONNECTIONS_PER_ENDPOINT;
        int maxBatch = DEFAULT_MAX_BATCH;
        int ioThreads = 1;
        Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
        Duration startupTimeout = DEFAULT_STARTUP_TIMEOUT;
        boolean preferEpoll = true;
        IoEventLoopGroup hostLoops;
        int maxFrameBytes = Frame.DEFAULT_MAX_FRAME_BYTES;
        boolean followPolicies = true;
        Duration policyTtl = DEFAULT_POLICY_TTL;
        PolicyStore policyStore;
        boolean localFallback = true;
        int circuitThreshold = 3;
        Duration circuitProbe = Duration.ofMillis(500);
        OutageListener outageListener;
        boolean fastLocalRejection;
        Duration recoveryRamp = Duration.ofSeconds(2);
        SSLContext tls;
        Duration keepAlive = DEFAULT_KEEP_ALIVE;
        Path tlsCa;
        Path tlsCertificate;
        Path tlsKey;

        /**
         * A connection that sent nothing for this long sends a PING (default 30 s), so that a
         * node's idle timeout ({@code --idle-timeout-ms}, 120 s by default) never closes a
         * connection a quiet service still needs. Keep it well under the nodes' idle timeout.
         */
        public Builder keepAlive(final Duration interval)
        {
            if (interval.isNegative() || interval.isZero())
            {
                throw new IllegalArgumentException("keep-alive interval must be positive, was " + interval);
            }
            this.keepAlive = interval;
            return this;
        }

        /**
         * TLS to the nodes, trusting only the CAs in this PEM bundle. Each node's certificate must
         * name the address it is given to {@link #endpoints} (an IP SAN for an IP address). Off by
         * default.
         */
        public Builder tls(final Path caBundle)
        {
            this.tlsCa = Objects.requireNonNull(caBundle, "caBundle");
            return this;
        }

        /**
         * Mutual TLS: present this certificate (PEM chain) and its private key (unencrypted PEM:
         * PKCS#8, PKCS#1 or SEC1) to nodes started with {@code --tls-client-auth require}. Turns TLS
         * on (with the JDK's default trust unless {@link #tls(java.nio.file.Path)} names the CAs).
         * The files are read once, at {@link #build()}; to follow files rotated on disk, pass
         * {@link #tls(javax.net.ssl.SSLContext)} the context of a watched
         * {@link dev.limiter.protocol.ReloadingTls}.
         */
        public Builder tlsClientCertificate(final Path certificate, final Path key)
        {
            this.tlsCertificate = Objects.requireNonNull(certificate, "certificate");
            this.tlsKey = Objects.requireNonNull(key, "key");
            return this;
        }

        /** TLS with a context of your own (its trust and key material as it says); replaces the file-based settings. */
        public Builder tls(final SSLContext context)
        {
            this.tls = Objects.requireNonNull(context, "context");
            return this;
        }

        /** The TLS context the settings describe, or null for plain TCP. */
        SslContext tlsContext()
        {
            if (tls == null && tlsCa == null && tlsCertificate == null)
            {
                return null;
            }
            final SSLContext context = tls != null ? tls : Pem.context(tlsCertificate, tlsKey, tlsCa);
            return new JdkSslContext(context, true, ClientAuth.NONE);
        }

        /**
         * Store nodes as {@code host:port} (comma-separated lists are accepted).
         *
         * @throws IllegalArgumentException for an endpoint that is not host:port
         */
        public Builder endpoints(final String... hostPorts)
        {
            for (final String list : hostPorts)
            {
                for (final String hostPort : list.split(","))
                {
                    endpoints.add(parseEndpoint(hostPort.strip()));
                }
            }
            return this;
        }

        public Builder endpoint(final InetSocketAddress address)
        {
            endpoints.add(Objects.requireNonNull(address));
            return this;
        }

        /** Per-call deadline (default 20 ms, at most 1 hour). */
        public Builder deadline(final Duration deadline)
        {
            this.deadline = checkDeadline(deadline);
            return this;
        }

        static Duration checkDeadline(final Duration deadline)
        {
            if (deadline.isNegative() || deadline.isZero() || deadline.compareTo(Duration.ofHours(1)) > 0)
            {
                throw new IllegalArgumentException("deadline must be positive and at most 1 hour, was " + deadline);
            }
            return deadline;
        }

        /**
         * Largest frame the SDK sends, in bytes (default 1 MiB, the node's default limit); a batch
         * that would be larger is split. Lower it to match a node started with a smaller
         * {@code --max-frame-bytes}.
         */
        public Builder maxFrameBytes(final int maxFrameBytes)
        {
            if (maxFrameBytes < 4096 || maxFrameBytes > 64 << 20)
            {
                throw new IllegalArgumentException("maxFrameBytes must be 4096 to 64 MiB, was " + maxFrameBytes);
            }
            this.maxFrameBytes = maxFrameBytes;
            return this;
        }

        /** TCP connections per endpoint (default 2). */
        public Builder connections(final int connectionsPerEndpoint)
        {
            if (connectionsPerEndpoint < 1 || connectionsPerEndpoint > 1024)
            {
                throw new IllegalArgumentException("connections must be 1 to 1024, was " + connectionsPerEndpoint);
            }
            this.connectionsPerEndpoint = connectionsPerEndpoint;
            return this;
        }

        /** Most acquires in one frame (default 256, at most 4096). */
        public Builder maxBatch(final int maxBatch)
        {
            if (maxBatch < 1 || maxBatch > AcquireCodec.MAX_BATCH)
            {
                throw new IllegalArgumentException("maxBatch must be 1 to " + AcquireCodec.MAX_BATCH +
                    ", was " + maxBatch);
            }
            this.maxBatch = maxBatch;
            return this;
        }

        /** SDK I/O threads (default 1). */
        public Builder ioThreads(final int ioThreads)
        {
            if (ioThreads < 1 || ioThreads > 64)
            {
                throw new IllegalArgumentException("ioThreads must be 1 to 64, was " + ioThreads);
            }
            this.ioThreads = ioThreads;
            return this;
        }

        /**
         * Use Netty's native epoll transport when netty-transport-native-epoll is on the classpath
         * (default true); NIO otherwise or when false.
         */
        public Builder preferEpoll(final boolean preferEpoll)
        {
            this.preferEpoll = preferEpoll;
            return this;
        }

        /**
         * Runs the client's connections on the host's event loops instead of threads of its own
         * (then {@link #ioThreads} and {@link #preferEpoll} do not apply: epoll or NIO, as the
         * loops are). For a host whose own server runs on the same loops, such as a gRPC server in
         * front of the limiter: a call made on a loop is batched and written by that loop without
         * a hand-off to another thread, and its answer completes there. The host keeps the loops
         * non-blocking and shuts them down after {@link LimiterClient#close()}.
         *
         * @param loops epoll or NIO event loops
         * @throws IllegalArgumentException for loops of another I/O type
         */
        public Builder eventLoops(final IoEventLoopGroup loops)
        {
            if (!loops.isIoType(NioIoHandler.class) && !(Transport.epollAvailable() && loops.isIoType(EpollIoHandler.class)))
            {
                throw new IllegalArgumentException("the SDK runs on epoll or NIO event loops; these are of another I/O type");
            }
            this.hostLoops = loops;
            return this;
        }

        /**
         * How long {@link #build()} waits, at most, until a connection is open, the policy set is
         * held (when following policies) and a PING went round (default 2 s), so that the first
         * calls are answered by nodes rather than failed or decided locally. With the cluster
         * down, build() returns after this long and calls decide locally (from a stored policy set)
         * or fail until a node answers; 0 returns at once.
         */
        public Builder startupTimeout(final Duration timeout)
        {
            if (timeout.isNegative())
            {
                throw new IllegalArgumentException("startup timeout must not be negative, was " + timeout);
            }
            this.startupTimeout = timeout;
            return this;
        }

        /** TCP connect timeout per attempt (default 1 s); build() waits at most this long. */
        public Builder connectTimeout(final Duration connectTimeout)
        {
            this.connectTimeout = connectTimeout;
            return this;
        }

        /**
         * Whether to fetch the cluster's policy set and follow its changes ({@link LimiterClient#policies()});
         * on by default. Off, no POLICIES request is sent.
         */
        public Builder followPolicies(final boolean follow)
        {
            this.followPolicies = follow;
            return this;
        }

        /**
         * How long a policy set stays usable after a node last confirmed it (default 5 minutes; the
         * client re-asks every third of it while connected). At least 1 second.
         *
         * @throws IllegalArgumentException when shorter than a second
         */
        public Builder policyTtl(final Duration ttl)
        {
            if (ttl == null || ttl.compareTo(Duration.ofSeconds(1)) < 0)
            {
                throw new IllegalArgumentException("policy TTL must be at least 1 second, was " + ttl);
            }
            this.policyTtl = ttl;
            return this;
        }

        /**
         * Keeps the last policy set across restarts of the host service (opt-in; none by default).
         * The SDK closes it when it is closed. See {@code policy-store-chronicle} for a Chronicle
         * Map file (which needs JVM flags; the SDK alone needs none).
         */
        public Builder policyStore(final PolicyStore store)
        {
            this.policyStore = store;
            return this;
        }

        /**
         * Whether the SDK decides on its own when no node answers in time: by the matched policy's
         * failure mode, OPEN from an emergency budget, CLOSED by refusing (on by default; needs
         * {@link #followPolicies}). Such decisions are {@link Decision#degraded()}.
         */
        public Builder localFallback(final boolean enabled)
        {
            this.localFallback = enabled;
            return this;
        }

        /**
         * The circuit: after {@code failures} consecutive calls no node answered, calls are decided
         * locally at once, and a node is tried again every quarter of {@code probeAfter} during the
         * first two {@code probeAfter} of the outage (a leader's failover is usually over by then),
         * every {@code probeAfter} later (each plus up to half of it, random). Kept for each Raft
         * group of the cluster's shard map (calls whose shard's group has no leader answering) and for
         * calls not routed to a group. Defaults: 3 calls, 500 ms.
         */
        public Builder circuit(final int failures, final Duration probeAfter)
        {
            if (failures < 1 || probeAfter == null || probeAfter.isNegative() || probeAfter.isZero())
            {
                throw new IllegalArgumentException("circuit needs at least 1 failure and a positive probe interval, was " +
                    failures + ", " + probeAfter);
            }
            this.circuitThreshold = failures;
            this.circuitProbe = probeAfter;
            return this;
        }

        /**
         * After an outage (the circuit opened, then a node answered), for this long what the SDK lets
         * through to the cluster grows at each policy's rate from nothing, instead of releasing
         * pent-up demand at once; calls over it are refused locally (degraded). Default 2 s; zero
         * turns it off.
         */
        public Builder recoveryRamp(final Duration ramp)
        {
            if (ramp == null || ramp.isNegative())
            {
                throw new IllegalArgumentException("recovery ramp must be zero or more, was " + ramp);
            }
            this.recoveryRamp = ramp;
            return this;
        }

        /**
         * After the cluster refused a descriptor with "retry after T", refuse the same descriptor
         * (for the same or a larger cost) locally until T, without a round trip (off by default).
         * It only ever refuses locally, never allows; a policy change within T is seen at T.
         */
        public Builder fastLocalRejection(final boolean enabled)
        {
            this.fastLocalRejection = enabled;
            return this;
        }

        /** Told (once per policy and outage) when a fail-closed or paging policy is decided locally: wire it to alerting. */
        public Builder onOutage(final OutageListener listener)
        {
            this.outageListener = listener;
            return this;
        }

        /**
         * Creates the client and waits (up to the startup timeout) for the first connection
         * attempts. It returns even when no node answered: connections keep retrying.
         *
         * @throws IllegalArgumentException for missing endpoints or unreadable TLS files (the message says which)
         */
        public LimiterClient build()
        {
            if (endpoints.isEmpty())
            {
                throw new IllegalArgumentException("no endpoints: call endpoints(\"host:port\")");
            }
            return new LimiterClient(new ClientContext(this));
        }

        static InetSocketAddress parseEndpoint(final String hostPort)
        {
            return HostPort.parse(hostPort, "endpoint");
        }
    }
}
