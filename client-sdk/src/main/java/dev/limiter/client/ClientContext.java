package dev.limiter.client;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;

import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Everything a {@link LimiterClient} is made of, built from its {@link LimiterClient.Builder} in
 * one fixed order in which each part is made from parts made before it, and closed in the reverse
 * order. The connections are made first but opened last, once every part that their events reach
 * exists: no part sees another half built.
 */
final class ClientContext implements AutoCloseable
{
    private static final String PROCESS_NAME = ManagementFactory.getRuntimeMXBean().getName();
    private static final AtomicInteger CLIENTS_IN_PROCESS = new AtomicInteger();
    /** How often a client routing by shard asks for the shard map again (a NOT_LEADER asks at once). */
    private static final long SHARD_MAP_REFRESH_NANOS = TimeUnit.SECONDS.toNanos(1);

    final long deadlineNanos;
    /**
     * This client as nodes count SDK instances: the process, and which client in it (each has its own local budgets).
     */
    final String instanceId;
    final PolicyCache policies;
    final PolicyStore policyStore;
    final EventLoopGroup loops;
    final boolean epoll;
    /** False when the connections run on the host's event loops: the host shuts them down. */
    final boolean ownsLoops;
    final ConnectionSet connections;
    final OutageReports outageReports;
    /** Null when local decisions are off. */
    final LocalFallback local;
    /** Null unless fast local rejection is on. */
    final LocalRejections rejections;
    final Circuit circuit;
    /** Which node leads the shard of a call's bucket (several Raft groups). */
    final ShardRouter router;
    final Delivery delivery;
    /** Ends every call by its deadline, whatever the I/O threads are doing. */
    final DeadlineTimer deadlines;
    final BlockingWait blockingWait;
    final Resender resender;
    final Releases releases;
    final ClusterPath cluster;
    /** Null when the client follows no policies. */
    final TokenBlocks blocks;
    /** The first stage of every call. */
    final CallPath path;
    /** Cancelled at close: on the host's event loops it would otherwise outlive the client. */
    private final ScheduledFuture<?> shardMapRefresh;
    private volatile boolean closed;

    ClientContext(final LimiterClient.Builder settings)
    {
        final SslContext tls = settings.tlsContext(); // first: bad TLS files fail before any thread starts
        final int clientNumber = CLIENTS_IN_PROCESS.incrementAndGet();
        final boolean follow = settings.followPolicies;
        this.deadlineNanos = settings.deadline.toNanos();
        this.instanceId = PROCESS_NAME + "#" + clientNumber;
        this.policies = new PolicyCache(settings.policyTtl, System::nanoTime);
        this.policyStore = settings.policyStore;
        if (policyStore != null)
        {
            policyStore.load().ifPresent(stored -> policies.restored(stored,
                TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis() - stored.confirmedAtMillis())));
            // Every new set is written through, on an SDK I/O thread: a store must be quick.
            policies.onChange(snapshot -> policyStore.save(new PolicyStore.Stored(
                snapshot.version(), System.currentTimeMillis(), snapshot.policies().toByteArray())));
        }
        if (settings.hostLoops != null)
        {
            this.epoll = Transport.epollAvailable() && settings.hostLoops.isIoType(EpollIoHandler.class);
            this.loops = settings.hostLoops;
            this.ownsLoops = false;
        }
        else
        {
            this.epoll = settings.preferEpoll && Transport.epollAvailable();
            this.loops = new MultiThreadIoEventLoopGroup(settings.ioThreads,
                new DefaultThreadFactory("limiter-client", true),
                epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
            this.ownsLoops = true;
        }
        final ConnectionSettings shared = new ConnectionSettings(
            epoll ? EpollSocketChannel.class : NioSocketChannel.class, tls, settings.connectTimeout.toMillis(),
            settings.keepAlive.toNanos(), settings.maxBatch, settings.maxFrameBytes,
            follow ? Math.max(1, settings.policyTtl.toNanos() / 3) : 0, ConnectionSettings.utf8(instanceId));
        final List<Connection> list = new ArrayList<>();
        for (final InetSocketAddress endpoint : settings.endpoints)
        {
            for (int i = 0; i < settings.connectionsPerEndpoint; i++)
            {
                list.add(new Connection(endpoint, loops.next(), shared, Backoff.DEFAULT, follow ? policies : null));
            }
        }
        this.connections = new ConnectionSet(list);
        this.outageReports = new OutageReports(instanceId, connections.all(), this::isClosed);
        this.local = follow && settings.localFallback ? new LocalFallback(policies, System::nanoTime,
            settings.circuitProbe.toNanos(), settings.outageListener, connections::fleetInstances) : null;
        this.rejections = settings.fastLocalRejection ? new LocalRejections() : null;
        this.circuit = new Circuit(local, rejections, outageReports, this::isClosed, settings.circuitThreshold,
            settings.circuitProbe.toNanos(), settings.recoveryRamp.toNanos());
        this.router = new ShardRouter(follow ? policies : null, circuit::avoid);
        policies.onChange(snapshot -> router.policiesChanged());
        this.delivery = new Delivery("limiter-callbacks-" + clientNumber);
        this.deadlines = new DeadlineTimer("limiter-deadlines-" + clientNumber, ClientContext::expire,
            delivery.executor());
        this.blockingWait = new BlockingWait(deadlines);
        this.resender = new Resender(connections, router, Backoff.DEFAULT, this::isClosed);
        this.releases = new Releases(connections, Backoff.DEFAULT, this::refreshShardMap, this::isClosed);
        this.cluster = new ClusterPath(router, circuit, connections, deadlines, delivery, blockingWait, this::isClosed);
        this.blocks = follow ? new TokenBlocks(policies, System::nanoTime, (descriptor, block) ->
            cluster.askForBlock(descriptor, block, deadlineNanos)) : null;
        this.path = callPath();
        // What local decisions and token blocks match against is compiled when a set arrives, on the
        // delivery thread: compiled lazily, the first call (on the deadline timer, or the caller's
        // thread) would pay for it.
        if (local != null)
        {
            policies.onChange(snapshot -> delivery.run(local::prepare));
            delivery.run(local::prepare);
        }
        if (blocks != null)
        {
            policies.onChange(snapshot -> delivery.run(blocks::prepare));
            delivery.run(blocks::prepare);
        }
        this.shardMapRefresh = loops.next().scheduleWithFixedDelay(this::refreshShardMap, SHARD_MAP_REFRESH_NANOS,
            SHARD_MAP_REFRESH_NANOS, TimeUnit.NANOSECONDS);
        final Connection.Events events = new Connection.Events(resender, router::mapReceived,
            blocks == null ? ClientContext::noHotKeys : blocks::hot);
        final CountDownLatch attempted = new CountDownLatch(list.size());
        for (final Connection connection : list)
        {
            connection.connect(events, attempted::countDown);
        }
        new Startup(this).await(attempted, follow, settings.startupTimeout);
    }

    /** The stages of a call, outermost first; a feature that is off has no stage. */
    private CallPath callPath()
    {
        CallPath head = cluster;
        if (rejections != null)
        {
            head = new FastRejectionStage(rejections, delivery, head);
        }
        if (blocks != null)
        {
            head = new TokenBlockStage(blocks, circuit, router, delivery, head);
        }
        return head;
    }

    private static void noHotKeys(final Descriptor descriptor)
    {
        // no token blocks: a hot key changes nothing here
    }

    boolean isClosed()
    {
        return closed;
    }

    /** Asks any open node for the shard map, when calls are routed by shard. */
    void refreshShardMap()
    {
        final Connection any = router.routes() && !closed ? connections.pick() : null;
        if (any != null)
        {
            any.requestShardMap();
        }
    }

    /** The deadline timer: the call is past its deadline (and any grace after a pause) with no answer. */
    private static void expire(final PendingCall call)
    {
        if (!call.isDone())
        {
            call.completeExceptionally(new LimiterTimeoutException("no answer within the call's deadline" +
                (call.lateHere ? " (this process was paused meanwhile)" : "")));
        }
    }

    /** Closes every part, last made first; calls still waiting fail with {@link LimiterUnavailableException}. */
    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        shardMapRefresh.cancel(false);
        for (final Connection connection : connections.all())
        {
            connection.close();
        }
        if (ownsLoops)
        {
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
        resender.close();
        releases.close();
        deadlines.close();
        delivery.close();
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
}
