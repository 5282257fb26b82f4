package dev.limiter.client;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.LeaseToken;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HostPort;
import dev.limiter.protocol.Pem;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ReleaseCodec;
import dev.limiter.protocol.ShardMap;
import dev.limiter.protocol.policy.FailureMode;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
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
 * {@link LimiterUnavailableException} (no open connection). Connections that drop are re-opened
 * in the background with jittered backoff. Futures complete on the SDK's I/O threads: do not block
 * in their callbacks (use the {@code *Async} variants with your own executor for slow work).
 * <p>
 * About a third of this file is the {@link Builder}, one documented setter per option; the calls
 * themselves use {@link ConnectionSet}, {@link Circuit}, {@link OutageReports}, the policy cache and
 * the local fallback, each a class of its own.
 */
public final class LimiterClient implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(LimiterClient.class);
    /**
     * Default per-call deadline: a caller waits at most this long on a dead or slow store (past it the
     * SDK decides locally). It covers a healthy cluster's answers (p50 about 1-2 ms on loopback here,
     * p99 15 ms with 50 callers), not one driven to saturation: docs/cluster.md measured p99 of 28-43
     * ms for STRICT with 1,024 calls in flight. Set it for the cluster and load you run.
     */
    public static final Duration DEFAULT_DEADLINE = Duration.ofMillis(20);
    public static final int DEFAULT_CONNECTIONS_PER_ENDPOINT = 2;
    /** How long past its deadline a blocking call waits for the SDK's deadline timer before looking whether it is stuck. */
    public static final long BLOCKING_SLACK_MILLIS = 10;
    /** The deadline timer counts as stuck when it has not gone round for this long (and the caller has). */
    private static final long TIMER_STUCK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    public static final int DEFAULT_MAX_BATCH = 256;
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(1);
    /** How long {@link Builder#build()} waits, at most, for a connection and the policy set. */
    public static final Duration DEFAULT_STARTUP_TIMEOUT = Duration.ofSeconds(2);

    private final EventLoopGroup group;
    /** Which node leads the shard of a call's bucket (several Raft groups). */
    private final ShardRouter router;
    /**
     * Delivers what the SDK decides itself (local decisions, deadline expiries), so that callers
     * chaining calls from callbacks never crowd the I/O threads that read the nodes' answers.
     */
    private final ExecutorService callbacks;
    /** Ends every call by its deadline, whatever the I/O threads are doing. */
    private final DeadlineTimer deadlines;
    private final boolean epoll;
    /** False when the connections run on the host's event loops ({@link Builder#eventLoops}): the host shuts them down. */
    private final boolean ownsGroup;
    private final ConnectionSet connections;
    private final long deadlineNanos;
    private volatile boolean closed;
    private final PolicyCache policies;
    /** Null when local decisions are off. */
    private final LocalFallback local;
    /** Null unless fast local rejection is on. */
    private final LocalRejections rejections;
    private static final String CLIENT_NAME = ManagementFactory.getRuntimeMXBean().getName();
    private static final AtomicInteger CLIENTS_IN_PROCESS = new AtomicInteger();
    /** This client as nodes count SDK instances (process, and which client in it: each has its own local budgets). */
    private final int clientNumber = CLIENTS_IN_PROCESS.incrementAndGet();
    private final String instanceId = CLIENT_NAME + "#" + clientNumber;
    private final LongAdder lateDeadlines = new LongAdder();
    /** Frames a node answered NOT_LEADER (their calls were sent on to another node). */
    private final LongAdder redirectedFrames = new LongAdder();
    private final LongAdder overloadedFrames = new LongAdder();
    /**
     * Calls waiting out a backoff before they are sent again: on no connection and in no queue, so
     * {@link #close()} fails them itself (a loop shut down drops its scheduled tasks unrun).
     */
    private final Set<PendingCall> awaitingResend = ConcurrentHashMap.newKeySet();
    private final LongAdder releaseFailures = new LongAdder();
    /** SDK token leases (policies with tokenLease); null when the client follows no policies. */
    private final TokenLeases leases;
    private final Circuit circuit;
    private final OutageReports outageReports;

    private final PolicyStore policyStore;

    /** Default time a policy set stays usable without a node confirming it. */
    public static final Duration DEFAULT_POLICY_TTL = Duration.ofMinutes(5);
    /** A connection that sent nothing for this long pings its node (nodes close connections silent for 120 s by default). */
    public static final Duration DEFAULT_KEEP_ALIVE = Duration.ofSeconds(30);
    /** How often a client routing by shard asks for the shard map again (a NOT_LEADER asks at once). */
    private static final long SHARD_MAP_REFRESH_NANOS = TimeUnit.SECONDS.toNanos(1);

    private LimiterClient(final Builder builder)
    {
        final SslContext tls = builder.tlsContext(); // first: bad TLS files fail before any thread starts
        this.policies = new PolicyCache(builder.policyTtl, System::nanoTime);
        this.router = new ShardRouter(builder.followPolicies ? policies : null, this::avoidLane);
        policies.onChange(snapshot -> router.policiesChanged());
        this.local = builder.followPolicies && builder.localFallback ?
            new LocalFallback(policies, System::nanoTime, builder.circuitProbe.toNanos(), builder.outageListener, this::fleetInstances) : null;
        this.rejections = builder.fastLocalRejection ? new LocalRejections() : null;
        this.leases = builder.followPolicies ? new TokenLeases(policies, System::nanoTime, this::askForBlock) :
            null;
        this.policyStore = builder.policyStore;
        if (policyStore != null)
        {
            policyStore.load().ifPresent(stored -> policies.restored(stored,
                TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis() - stored.confirmedAtMillis())));
            // Every new set is written through (on an SDK I/O thread: a store must be quick).
            policies.onChange(snapshot -> policyStore.save(new PolicyStore.Stored(snapshot.version(), System.currentTimeMillis(),
                snapshot.policies().toByteArray())));
        }
        this.deadlineNanos = builder.deadline.toNanos();
        this.callbacks = Executors.newSingleThreadExecutor(new DefaultThreadFactory("limiter-callbacks-" + clientNumber, true));
        this.deadlines = new DeadlineTimer("limiter-deadlines-" + clientNumber, this::expire, callbacks);
        if (local != null)
        {
            // Compile what local decisions match against when a set arrives, on the callback thread: the
            // first local decision is made on the deadline timer, and a compile there (tens of ms cold)
            // would hold every other call's deadline up.
            policies.onChange(snapshot -> prepareLocal());
            prepareLocal();
        }
        if (leases != null)
        {
            // The same for token leases: compiled lazily, the first call paid 10-15 ms for it (a fresh
            // client against a warm node, sample policies: first call 19-26 ms, 7-11 ms without leases).
            policies.onChange(snapshot -> onCallbackThread(leases::prepare));
            onCallbackThread(leases::prepare);
        }
        if (builder.hostLoops != null)
        {
            // The host's loops: epoll or NIO as they are; the host shuts them down.
            this.epoll = Transport.epollAvailable() && builder.hostLoops.isIoType(EpollIoHandler.class);
            this.group = builder.hostLoops;
            this.ownsGroup = false;
        }
        else
        {
            this.epoll = builder.preferEpoll && Transport.epollAvailable();
            this.group = new MultiThreadIoEventLoopGroup(builder.ioThreads,
                new DefaultThreadFactory("limiter-client", true), epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
            this.ownsGroup = true;
        }
        final Connection.Rerouter refused = new Connection.Rerouter()
        {
            @Override
            public void reroute(final Connection from, final PendingCall[] calls, final String leaderHint)
            {
                LimiterClient.this.reroute(from, calls, leaderHint);
            }

            @Override
            public void retryLater(final Connection from, final PendingCall[] calls, final String why)
            {
                LimiterClient.this.retryLater(from, calls, why);
            }
        };
        final List<Connection> list = new ArrayList<>();
        for (final InetSocketAddress endpoint : builder.endpoints)
        {
            for (int i = 0; i < builder.connectionsPerEndpoint; i++)
            {
                list.add(new Connection(endpoint, group.next(), builder.maxBatch, builder.maxFrameBytes, builder.connectTimeout.toMillis(),
                    epoll ? EpollSocketChannel.class : NioSocketChannel.class, refused,
                    builder.followPolicies ? policies : null, Math.max(1, builder.policyTtl.toNanos() / 3), instanceId, tls,
                    builder.keepAlive.toNanos(), this::shardMapReceived, this::hotKeySeen));
            }
        }
        this.connections = new ConnectionSet(list);
        // With several Raft groups, calls go to their shard's leader: keep the map current (a
        // NOT_LEADER asks for it at once too). Nothing is sent while the cluster has one group.
        group.next().scheduleWithFixedDelay(this::refreshShardMap, SHARD_MAP_REFRESH_NANOS, SHARD_MAP_REFRESH_NANOS,
            TimeUnit.NANOSECONDS);
        this.outageReports = new OutageReports(instanceId, connections.all(), () -> closed);
        this.circuit = new Circuit(local, rejections, outageReports, () -> closed, builder.circuitThreshold,
            builder.circuitProbe.toNanos(), builder.recoveryRamp.toNanos());
        final CountDownLatch attempted = new CountDownLatch(list.size());
        for (final Connection connection : list)
        {
            connection.connect(attempted::countDown);
        }
        awaitReady(attempted, builder.followPolicies, builder.startupTimeout);
    }

    /**
     * Ready at start: waits (at most {@code timeout}) for the first attempt of every connection,
     * then for one to be open and, when following policies, for the policy set; then round-trips
     * a PING on each open connection, so that the first real calls find the code paths loaded and
     * the connections warm. A cluster that is down at start costs the whole wait, once.
     */
    private void awaitReady(final CountDownLatch attempted, final boolean needPolicies, final Duration timeout)
    {
        final long end = System.nanoTime() + timeout.toNanos();
        try
        {
            attempted.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
            while (System.nanoTime() - end < 0 && (connections.pick() == null || needPolicies && policies.current().isEmpty()))
            {
                Thread.sleep(2);
            }
            final CompletableFuture<Void> warm = connections.pick() == null ? CompletableFuture.completedFuture(null) : pingAll(end);
            if (local != null)
            {
                local.prepare(); // here, not on the deadline timer at the first local decision
            }
            if (leases != null)
            {
                leases.prepare(); // here, not on the first call's thread
            }
            warm.get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
        catch (final ExecutionException | TimeoutException notReady)
        {
            LOG.warn("limiter client not ready within {} (no node answered a PING): calls decide locally or fail until one does",
                timeout);
        }
        if (connections.pick() == null)
        {
            LOG.warn("limiter client: no node of {} reachable within {}; calls decide locally (from a stored policy set) or fail " +
                "until one is", connections.endpoints(), timeout);
        }
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

    /** {@link Circuit#avoid} (false while the client is being built: the circuit comes after the router). */
    private boolean avoidLane(final int lane)
    {
        final Circuit made = circuit;
        return made != null && made.avoid(lane);
    }

    /** A decision the SDK made itself: async callers get it on an SDK thread, blocking callers at once. */
    private static final class Decided extends CompletableFuture<Decision>
    {
        final Decision decision;

        Decided(final Decision decision)
        {
            this.decision = decision;
        }
    }

    /**
     * A decision made here, delivered on an SDK thread: callers chain their next call from the
     * callback, and a future completed on their own stack would recurse.
     */
    private CompletableFuture<Decision> later(final Decision decision)
    {
        final Decided result = new Decided(decision);
        try
        {
            callbacks.execute(() -> result.complete(decision));
        }
        catch (final RejectedExecutionException closing)
        {
            result.complete(decision);
        }
        return result;
    }

    /** What this client has seen so far and its state now, read at this moment (allocates one record). */
    public ClientStats stats()
    {
        return new ClientStats(
            connections.open(),
            circuit.openLanes(),
            router.routes(),
            epoll,
            redirectedFrames.sum(),
            overloadedFrames.sum(),
            rejections == null ? 0 : rejections.count(),
            local == null ? 0 : local.rampRefusals(),
            circuit.degradedTime(),
            outageReports.reported(),
            leases == null ? 0 : leases.leased(),
            leases == null ? 0 : leases.used(),
            leases == null ? 0 : leases.lapsed(),
            releaseFailures.sum(),
            fleetInstances(),
            lateDeadlines.sum(),
            deadlines.pauses(),
            circuit.pausedTimeouts());
    }

    /**
     * SDK instances subscribed at the nodes as they last reported it: the largest count among this
     * client's connections (kept through an outage), 0 before any report. Fleet-wide emergency
     * budgets are split by it.
     */
    private int fleetInstances()
    {
        int most = 0;
        for (final Connection connection : connections.all())
        {
            most = Math.max(most, connection.fleetInstances());
        }
        return most;
    }

    /** The local-decision counters, for {@link LimiterMetrics}; null when local decisions are off. */
    LocalFallback localFallback()
    {
        return local;
    }

    /**
     * The cluster's policy set as this client holds it: fetched when a connection opens, pushed
     * by the node within moments of every change, usable for the TTL after a node last confirmed
     * it (see {@link Builder#policyTtl}). Empty until the first set arrives, and when following
     * policies is off.
     */
    public PolicyCache policies()
    {
        return policies;
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
        return acquire(descriptor, cost, deadlineNanos);
    }

    /**
     * As {@link #acquire(Descriptor, int)} with a deadline for this call.
     *
     * @throws IllegalArgumentException when the deadline is not positive or longer than an hour
     */
    public CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost, final Duration deadline)
    {
        return acquire(descriptor, cost, Builder.checkDeadline(deadline).toNanos());
    }

    private CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost, final long deadline)
    {
        if (cost < 1)
        {
            throw new IllegalArgumentException("cost must be at least 1 token, was " + cost + " (to ask without charging, use check)");
        }
        return acquire(descriptor, cost, cost, deadline, false);
    }

    /**
     * Asks whether {@code descriptor}'s limits have a token now, charging nothing: allowed when a
     * request of one token would be (every scope it would be charged against has one), with what
     * is left as it is. A check takes no lease and never leases tokens to this SDK. When no node
     * answers in time it is decided locally as a call would be (an emergency budget is looked at,
     * not spent; fail-closed policies refuse).
     */
    public CompletableFuture<Decision> check(final Descriptor descriptor)
    {
        return acquire(descriptor, 0, 0, deadlineNanos, false);
    }

    /** As {@link #check(Descriptor)} with a deadline for this call. */
    public CompletableFuture<Decision> check(final Descriptor descriptor, final Duration deadline)
    {
        return acquire(descriptor, 0, 0, Builder.checkDeadline(deadline).toNanos(), false);
    }

    /**
     * @param wireCost what the node is asked for: the cost, or a token lease's block (a local
     *                 decision, if the node does not answer, is still for the cost)
     * @param blocking the caller waits in {@link #acquireBlocking}, which parks for a reservation's wait itself
     */
    private CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost, final int wireCost, final long deadline,
        final boolean blocking)
    {
        Objects.requireNonNull(descriptor, "descriptor");
        if (leases != null && !blocking && cost > 0)
        {
            final Decision leased = leases.tryLocal(descriptor, cost);
            if (leased != null)
            {
                return later(leased);
            }
        }
        final long now = System.nanoTime(); // one clock read per call: the refusal table and the deadline
        if (rejections != null)
        {
            final Decision known = rejections.stillDenied(descriptor, cost, now);
            if (known != null)
            {
                return later(known);
            }
        }
        final int shard = router.shardFor(descriptor);
        final int lane = router.laneOf(shard);
        final Decision ramped = circuit.ramped(lane, descriptor, cost);
        if (ramped != null)
        {
            return later(ramped);
        }
        boolean probe = false;
        final long openUntil = circuit.openUntilNanos(lane);
        if (openUntil != 0)
        {
            // The call's circuit is open: decide at once, without waiting on a dead leader. Past the
            // probe time it is half-open: one call at a time tries the cluster, the others still decide
            // here, so a group that is still dead (or slow) holds up one caller per probe, not all of them.
            probe = circuit.takeProbe(lane, openUntil);
            if (!probe)
            {
                final Decision decided = circuit.decideOpen(descriptor, cost);
                if (decided != null)
                {
                    return later(decided);
                }
            }
        }
        final PendingCall call = new PendingCall(descriptor, cost, now + deadline, circuit);
        call.probe = probe;
        call.lane = lane;
        call.blocking = blocking; // before it is sent: the answer may come back at once
        call.wireCost = wireCost;
        if (closed)
        {
            call.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
            return call;
        }
        deadlines.add(call);
        final Connection connection = connections.pick(router.leaderOfShard(shard));
        if (connection == null)
        {
            final LimiterUnavailableException failure = new LimiterUnavailableException("no open connection to any limiter node " +
                connections.endpoints() + " (reconnecting; last error: " + connections.all()[0].lastError() + ")");
            // On an SDK thread: the fallback may turn it into a decision, and a caller that issues
            // its next call from the callback must not recurse on its own stack.
            callbacks.execute(() -> call.completeExceptionally(failure));
            return call;
        }
        connection.submit(call);
        return call;
    }

    /**
     * Blocking form of {@link #acquire(Descriptor, int)}. It returns by the call's deadline plus
     * about a millisecond: the SDK's deadline timer ends the call then, whatever its I/O threads
     * are doing, and decides it locally when the policy says how. After a pause of this process
     * (a GC) a call due during it gets a few more milliseconds for an answer that arrived meanwhile
     * to be read. Should even the timer be stuck (it did not turn through two 20 ms waits of this
     * thread, so that a pause of the whole process is not taken for it), the call fails on the
     * caller's thread {@value #BLOCKING_SLACK_MILLIS} + 40 ms past the deadline.
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
        if (cost < 1)
        {
            throw new IllegalArgumentException("cost must be at least 1 token, was " + cost + " (to ask without charging, use check)");
        }
        final Decision decision = leases != null ? decideWithLeases(descriptor, cost) : awaitDecision(descriptor, cost);
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

    /**
     * A blocking call under SDK token leases: from this SDK's block of the key's tokens when it has
     * one (no round trip, nothing allocated), else from the cluster, asking for a new block when the
     * key's demand here calls for one (its answer serves this call too).
     */
    private Decision decideWithLeases(final Descriptor descriptor, final int cost)
    {
        Objects.requireNonNull(descriptor, "descriptor");
        final Decision leased = leases.tryLocal(descriptor, cost);
        if (leased != null)
        {
            return leased;
        }
        // No circuit open (nearly always): no need to find the call's lane, which acquire does anyway.
        final int ask = circuit.openLanes() == 0 || circuit.openUntilNanos(router.laneOf(router.shardFor(descriptor))) == 0 ?
            leases.toAsk(descriptor, cost) : cost;
        if (ask > cost)
        {
            final long askedAt = System.nanoTime();
            final Decision answer;
            try
            {
                // Asks the node for the block; decided here, if no node answers, for this call's cost only.
                answer = awaitDecision(descriptor, cost, ask);
            }
            catch (final RuntimeException e)
            {
                leases.granted(descriptor, cost, ask, askedAt, null);
                throw e;
            }
            if (leases.granted(descriptor, cost, ask, askedAt, answer))
            {
                return answer;
            }
            // The bucket had less than a block: this call asks for its own cost, like any other.
        }
        return awaitDecision(descriptor, cost);
    }

    /**
     * A token lease's next block, asked for in the background (its tokens are for later calls):
     * straight to the cluster, never decided here (no local fallback, no circuit), and not while
     * the circuit of its group is open.
     */
    private CompletableFuture<Decision> askForBlock(final Descriptor descriptor, final Integer block)
    {
        final PendingCall call = new PendingCall(descriptor, block, System.nanoTime() + deadlineNanos);
        final int shard = router.shardFor(descriptor);
        final Connection connection = closed || circuit.openUntilNanos(router.laneOf(shard)) != 0 ? null :
            connections.pick(router.leaderOfShard(shard));
        if (connection == null)
        {
            call.completeExceptionally(new LimiterUnavailableException("no block now"));
            return call;
        }
        deadlines.add(call);
        connection.submit(call);
        return call;
    }

    /** A node said a call's key is hot (its policy leases hot keys only): its calls may now take blocks. */
    private void hotKeySeen(final Descriptor descriptor)
    {
        if (leases != null)
        {
            leases.hot(descriptor);
        }
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
        return new Lease(this, decision, descriptor.encoded(), cost, router.leaderFor(descriptor));
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

    /** Most tries of a release (following NOT_LEADER, or waiting 5-25 ms when no leader is named) before it fails. */
    private static final int RELEASE_ATTEMPTS = 8;

    CompletableFuture<Void> release(final LeaseToken lease, final String leaderHint)
    {
        final CompletableFuture<Void> done = new CompletableFuture<>();
        if (closed)
        {
            done.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
            return done;
        }
        final byte[] body = ReleaseCodec.body(lease.leaseId(), lease.check(), lease.cost(), lease.encodedFields());
        sendRelease(body, leaderHint, System.nanoTime() + deadlineNanos, RELEASE_ATTEMPTS, done);
        return done;
    }

    private void sendRelease(final byte[] body, final String target, final long deadline, final int attempts, final CompletableFuture<Void> done)
    {
        final Connection connection = connections.pick(target);
        if (connection == null)
        {
            done.completeExceptionally(new LimiterUnavailableException("no open connection to any limiter node " + connections.endpoints() +
                " to release a lease (it counts until it expires)"));
            return;
        }
        connection.request(MessageType.RELEASE, body, deadline).whenComplete((ok, failure) ->
        {
            if (failure == null)
            {
                done.complete(null);
            }
            else if (failure instanceof LimiterRequestException refused && refused.code() == ErrorCode.NOT_LEADER && attempts > 1 &&
                deadline - System.nanoTime() > 0)
            {
                refreshShardMap();
                final String named = refused.detail();
                if (named != null && !named.isEmpty() && !named.equals(connection.hostPort()))
                {
                    sendRelease(body, named, deadline, attempts - 1, done); // the leader's address, as the node named it
                    return;
                }
                // No leader to go to yet (an election, or a leader handing over): try again a little
                // later (jittered, as refused calls do), on any node, within the deadline.
                final long delay = noLeaderBackoffNanos();
                if (deadline - System.nanoTime() - delay <= 0)
                {
                    done.completeExceptionally(failure);
                    return;
                }
                try
                {
                    connection.loop().schedule(() -> sendRelease(body, "", deadline, attempts - 1, done), delay, TimeUnit.NANOSECONDS);
                }
                catch (final RejectedExecutionException closing)
                {
                    done.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
                }
            }
            else
            {
                done.completeExceptionally(failure);
            }
        });
    }

    /** A lease's release failed: it counts until it expires. */
    void releaseFailed(final LeaseToken lease, final Throwable cause)
    {
        releaseFailures.increment();
        LOG.warn("could not release lease {} (it counts against its limit until it expires): {}", lease.encode(), cause.toString());
    }

    /** The client's default deadline, ns. */
    long deadlineNanos()
    {
        return deadlineNanos;
    }

    private Decision awaitDecision(final Descriptor descriptor, final int cost)
    {
        return awaitDecision(descriptor, cost, cost);
    }

    private Decision awaitDecision(final Descriptor descriptor, final int cost, final int wireCost)
    {
        final CompletableFuture<Decision> future = acquire(descriptor, cost, wireCost, deadlineNanos, true);
        if (future instanceof Decided decided)
        {
            return decided.decision; // the SDK decided already; only its delivery to async callers waits
        }
        final PendingCall call = (PendingCall)future;
        call.blocking = true;
        try
        {
            // The deadline timer ends the call: at its deadline, or a little later after a pause of
            // this process (answers that arrived meanwhile get read first). The caller ends it itself
            // only if the timer has stopped going round (it should never).
            long wait = Math.max(0, call.deadlineNanos - System.nanoTime()) + TimeUnit.MILLISECONDS.toNanos(BLOCKING_SLACK_MILLIS);
            long timerTurnSeen = 0;
            long lookedAt = 0;
            int stillLooks = 0;
            while (true)
            {
                try
                {
                    return future.get(wait, TimeUnit.NANOSECONDS);
                }
                catch (final TimeoutException late)
                {
                    final long now = System.nanoTime();
                    final long lastTurn = deadlines.lastTurnNanos();
                    // Stuck only if it did not turn through two waits of this thread that took about as long
                    // as asked: after a pause of the whole process this thread may wake before the timer
                    // runs again, and a wait that overran (a pause) is no evidence.
                    final boolean still = now - lastTurn >= TIMER_STUCK_NANOS && lastTurn == timerTurnSeen &&
                        now - lookedAt < 2 * TIMER_STUCK_NANOS;
                    stillLooks = still ? stillLooks + 1 : 0;
                    timerTurnSeen = lastTurn;
                    lookedAt = now;
                    if (stillLooks < 2)
                    {
                        wait = TIMER_STUCK_NANOS; // the timer is alive (or may be): it will end the call
                        continue;
                    }
                }
                lateDeadlines.increment();
                call.lateHere = true; // this side was late (its timer did not run): not the store's failure
                call.completeExceptionally(new LimiterTimeoutException("no answer within the call's deadline (the SDK's deadline timer was late)"));
                return future.get();
            }
        }
        catch (final ExecutionException e)
        {
            if (e.getCause() instanceof LimiterException)
            {
                throw (LimiterException)e.getCause();
            }
            throw new LimiterException("acquire failed: " + e.getCause(), e.getCause());
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new LimiterException("interrupted while waiting for a decision", e);
        }
    }

    /** The deadline timer: the call is past its deadline (and any grace after a pause) with no answer. */
    private void prepareLocal()
    {
        onCallbackThread(local::prepare);
    }

    private void onCallbackThread(final Runnable task)
    {
        try
        {
            callbacks.execute(task);
        }
        catch (final RejectedExecutionException closing)
        {
            // closed meanwhile: nothing will be decided any more
        }
    }

    private void expire(final PendingCall call)
    {
        if (!call.isDone())
        {
            call.completeExceptionally(new LimiterTimeoutException("no answer within the call's deadline" +
                (call.lateHere ? " (this process was paused meanwhile)" : "")));
        }
    }

    /** Round-trips a PING on every open connection; completes when all answered. */
    public CompletableFuture<Void> ping()
    {
        return pingAll(System.nanoTime() + deadlineNanos);
    }

    private CompletableFuture<Void> pingAll(final long deadline)
    {
        final List<CompletableFuture<Void>> pings = connections.pingOpen(deadline);
        if (pings.isEmpty())
        {
            return CompletableFuture.failedFuture(new LimiterUnavailableException("no open connection to " + connections.endpoints()));
        }
        return CompletableFuture.allOf(pings.toArray(new CompletableFuture[0]));
    }

    /** Waits until at least one connection is open; true if one is. */
    public boolean awaitConnected(final Duration timeout) throws InterruptedException
    {
        final long end = System.nanoTime() + timeout.toNanos();
        while (connections.pick() == null)
        {
            if (System.nanoTime() - end > 0)
            {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }

    /** Frames sent and neither answered nor dropped yet, over every connection (asks each I/O thread; for tests). */
    int framesAwaitingAnswer()
    {
        int frames = 0;
        for (final Connection connection : connections.all())
        {
            frames += connection.framesAwaitingAnswer();
        }
        return frames;
    }

    /**
     * A node refused calls because it does not lead: send them to the leader it named, or, during
     * an election, to another node shortly after. Calls keep their deadlines.
     */
    private void reroute(final Connection from, final PendingCall[] calls, final String leaderHint)
    {
        redirectedFrames.increment();
        final boolean known = connections.followLeaderHint(from, leaderHint);
        if (router.routes())
        {
            from.requestShardMap(); // leadership moved: the refusing node knows where to
        }
        for (final PendingCall call : calls)
        {
            if (call.isDone())
            {
                continue;
            }
            if (known)
            {
                resubmit(call, leaderHint, NO_LEADER_IN_TIME);
            }
            else
            {
                // No leader yet: try again a little later (jittered), on any node.
                resubmitLater(from, call, noLeaderBackoffNanos(), NO_LEADER_IN_TIME);
            }
        }
    }

    private static final String NO_LEADER_IN_TIME = "no leader answered within the call's deadline";

    /** How long a request refused with no leader to go to waits before it is sent again: 5-25 ms, jittered. */
    private static long noLeaderBackoffNanos()
    {
        return 5_000_000L + ThreadLocalRandom.current().nextLong(20_000_000L);
    }
    /** First backoff after an OVERLOADED answer; it doubles with each one the same call gets. */
    static final long OVERLOAD_BACKOFF_MIN_NANOS = 1_000_000L;
    /** Longest backoff after an OVERLOADED answer (about a commit's latency under full load here). */
    static final long OVERLOAD_BACKOFF_MAX_NANOS = 32_000_000L;

    /**
     * A node decided none of these calls: its replication log is behind. Each is sent again after a
     * jittered, doubling backoff (half to all of 1, 2, 4 ... 32 ms), so that a saturated leader is
     * not asked again at once by every caller, and never past the call's deadline: one whose next
     * try would come after it is left to the deadline timer, and ends as a timeout, like a call no
     * node answered (counted by the circuit as such).
     */
    private void retryLater(final Connection from, final PendingCall[] calls, final String why)
    {
        overloadedFrames.increment();
        final String timeout = "the cluster was overloaded until the call's deadline (" + why + ")";
        for (final PendingCall call : calls)
        {
            if (call.isDone())
            {
                continue;
            }
            final long backoff = Math.min(OVERLOAD_BACKOFF_MAX_NANOS, OVERLOAD_BACKOFF_MIN_NANOS << Math.min(call.overloadedTries, 5));
            call.overloadedTries++;
            final long delay = backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1);
            if (delay < call.deadlineNanos - System.nanoTime())
            {
                resubmitLater(from, call, delay, timeout);
            }
            // else not sent again: the deadline timer ends it (off this I/O thread, like any call due).
        }
    }

    /** Sends {@code call} again after {@code delayNanos} on {@code from}'s I/O thread (as {@link #resubmit}). */
    private void resubmitLater(final Connection from, final PendingCall call, final long delayNanos, final String whyOutOfTime)
    {
        awaitingResend.add(call);
        try
        {
            from.loop().schedule(() ->
            {
                awaitingResend.remove(call);
                resubmit(call, "", whyOutOfTime);
            }, delayNanos, TimeUnit.NANOSECONDS);
        }
        catch (final RejectedExecutionException e)
        {
            awaitingResend.remove(call);
            call.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
        }
        if (closed && awaitingResend.remove(call))
        {
            call.completeExceptionally(new LimiterUnavailableException("limiter client closed")); // close() ran meanwhile
        }
    }

    /** A node's answer to SHARD_MAP (on an I/O thread). */
    private void shardMapReceived(final ShardMap map)
    {
        router.mapReceived(map);
    }

    private void refreshShardMap()
    {
        final Connection any = router.routes() && !closed ? connections.pick() : null;
        if (any != null)
        {
            any.requestShardMap();
        }
    }

    /** Sends a refused call again: to {@code leaderHint} when it is open, else where it would go now. */
    private void resubmit(final PendingCall call, final String leaderHint, final String whyOutOfTime)
    {
        if (call.isDone())
        {
            return;
        }
        if (call.deadlineNanos - System.nanoTime() <= 0)
        {
            call.completeExceptionally(new LimiterTimeoutException(whyOutOfTime));
            return;
        }
        final Connection hinted = closed ? null : connections.open(leaderHint);
        final Connection connection = closed ? null : hinted != null ? hinted : connections.pick(router.leaderFor(call.descriptor));
        if (connection == null)
        {
            call.completeExceptionally(new LimiterUnavailableException("no open connection to any limiter node " + connections.endpoints()));
            return;
        }
        connection.submit(call);
    }

    /** Closes every connection; calls still waiting fail with {@link LimiterUnavailableException}. */
    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        for (final Connection connection : connections.all())
        {
            connection.close();
        }
        if (ownsGroup)
        {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
        for (final PendingCall call : awaitingResend)
        {
            if (awaitingResend.remove(call))
            {
                call.completeExceptionally(new LimiterUnavailableException("limiter client closed"));
            }
        }
        deadlines.close();
        callbacks.shutdown();
        if (policyStore != null)
        {
            try
            {
                policyStore.close();
            }
            catch (final RuntimeException e)
            {
                // Closing must not fail the host's shutdown: the store is a cache.
            }
        }
    }

    /** Settings for a {@link LimiterClient}; every one has a default. */
    public static final class Builder
    {
        private final List<InetSocketAddress> endpoints = new ArrayList<>();
        private Duration deadline = DEFAULT_DEADLINE;
        private int connectionsPerEndpoint = DEFAULT_CONNECTIONS_PER_ENDPOINT;
        private int maxBatch = DEFAULT_MAX_BATCH;
        private int ioThreads = 1;
        private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
        private Duration startupTimeout = DEFAULT_STARTUP_TIMEOUT;
        private boolean preferEpoll = true;
        private IoEventLoopGroup hostLoops;
        private int maxFrameBytes = Frame.DEFAULT_MAX_FRAME_BYTES;
        private boolean followPolicies = true;
        private Duration policyTtl = DEFAULT_POLICY_TTL;
        private PolicyStore policyStore;
        private boolean localFallback = true;
        private int circuitThreshold = 3;
        private Duration circuitProbe = Duration.ofMillis(500);
        private OutageListener outageListener;
        private boolean fastLocalRejection;
        private Duration recoveryRamp = Duration.ofSeconds(2);
        private SSLContext tls;
        private Duration keepAlive = DEFAULT_KEEP_ALIVE;
        private Path tlsCa;
        private Path tlsCertificate;
        private Path tlsKey;

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
            return new LimiterClient(this);
        }

        static InetSocketAddress parseEndpoint(final String hostPort)
        {
            return HostPort.parse(hostPort, "endpoint");
        }
    }
}
