package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PoliciesCodec;
import dev.limiter.protocol.ShardMap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.FastThreadLocal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * One connection to a store node, made of parts that all run on its event loop: the {@link Link}
 * (open, re-open, keep alive), the {@link Batcher} (calls into frames), the {@link InFlightTable}
 * (frames awaiting answers), the {@link PolicySubscription} and the {@link FrameAdapter} with the
 * {@link ResultReader} (what the node sends). This class joins them: it routes each message the
 * adapter reads to the part it is for, and tells the client what it must act on ({@link Events}).
 * Callers on any thread {@link #submit} calls and {@link #request} requests.
 */
final class Connection implements FrameAdapter.Listener, Link.Listener
{
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);
    /**
     * The connection whose answers this I/O thread is handing to callers right now, else null: a
     * call made from such an answer's callback goes back on the same connection, or, for another
     * node, on that node's first connection on this thread (see {@link ConnectionSet#open}), so
     * chained calls share frames.
     */
    private static final FastThreadLocal<Connection> ANSWERING = new FastThreadLocal<>();

    /** Where calls go that a node refused without deciding them. */
    interface Refusals
    {
        /**
         * A node does not lead. @param leaderHint the leader's {@code host:port} as the node told it, or "" when
         * unknown
         */
        void notLeader(Connection from, PendingCall[] calls, String leaderHint);

        /** A node decided nothing in the frame because its replication log is behind ({@code OVERLOADED}). */
        void overloaded(Connection from, PendingCall[] calls, String why);
    }

    /**
     * What a connection tells the rest of the client, on its event loop.
     *
     * @param refusals  calls a node refused without deciding them
     * @param shardMaps every shard map a node sends
     * @param hotKeys   every call whose answer flags its key as hot (for token blocks with a hotRate)
     */
    record Events(Refusals refusals, Consumer<ShardMap> shardMaps, Consumer<Descriptor> hotKeys)
    {
    }

    private final InetSocketAddress address;
    private final String hostPort;
    private final EventLoop loop;
    private final Link link;
    private final InFlightTable inFlight;
    private final Batcher batcher;
    private final PolicySubscription subscription;
    private final ResultReader results;
    /** A keep-alive PING's deadline, ns. */
    private final long keepAliveNanos;
    /** How long a HELLO waits for a readable answer before it is sent again, ms. */
    private final long helloTimeoutMillis;
    /** The correlation id of this link's HELLO while it awaits its answer, else 0. Event loop only. */
    private long helloId;
    /** What the node behind the link said it can do ({@link Features}), 0 until it said. Event loop only. */
    private long nodeFeatures;
    /** Set once by {@link #connect}, before the link opens. */
    private Events events;
    /** Set once by the {@link ConnectionSet} that takes this connection, before any call is made. */
    private volatile ConnectionSet owner;
    private volatile boolean closed;
    /**
     * When this connection's I/O thread last came round to a stamp the deadline timer asked for:
     * it had read whatever had arrived before then. Stamped on demand (an idle client wakes no thread).
     */
    private volatile long loopRanNanos = System.nanoTime();
    private final AtomicBoolean stampAsked = new AtomicBoolean();
    private final Runnable stamp = () ->
    {
        loopRanNanos = System.nanoTime();
        stampAsked.set(false);
    };

    /**
     * @param policies the cache the node's policy sets go to, or null when the client does not follow policies
     */
    Connection(final InetSocketAddress address, final EventLoop loop, final ConnectionSettings settings,
        final Backoff backoff,
        final PolicyCache policies)
    {
        this.address = address;
        this.hostPort = address.getHostString() + ":" + address.getPort(); // compared on every routed call: made once
        this.loop = loop;
        this.link = new Link(address, hostPort, loop, settings, backoff, this);
        this.inFlight = new InFlightTable(loop, hostPort);
        this.batcher = new Batcher(loop, link, inFlight, settings, this::unavailable);
        this.subscription = new PolicySubscription(loop, link, policies, settings, hostPort);
        this.results = new ResultReader(hostPort);
        this.keepAliveNanos = settings.keepAliveNanos();
        this.helloTimeoutMillis = settings.connectTimeoutMillis();
    }

    /**
     * Starts connecting, telling {@code to} what the node sends; {@code onFirstAttempt} runs when the first attempt
     * ends.
     */
    void connect(final Events to, final Runnable onFirstAttempt)
    {
        this.events = to;
        link.connect(onFirstAttempt);
    }

    /**
     * Whether this connection's I/O thread has come round to its tasks since {@code sinceNanos}
     * (having read what had arrived by then). When that is not known yet, asks it to say so, for a
     * later look: a free thread answers within microseconds, a stalled one does not. Any thread.
     */
    boolean loopRanSince(final long sinceNanos)
    {
        if (loopRanNanos - sinceNanos >= 0)
        {
            return true;
        }
        if (stampAsked.compareAndSet(false, true))
        {
            try
            {
                loop.execute(stamp);
            }
            catch (final RejectedExecutionException stopped)
            {
                stampAsked.set(false);
                return true; // no thread will read anything more: nothing to wait for
            }
        }
        return false;
    }

    InetSocketAddress address()
    {
        return address;
    }

    /** The connection whose answers the calling thread is handing out now (in their callbacks), else null. */
    static Connection answeringOnThisThread()
    {
        return ANSWERING.getIfExists();
    }

    /** The rest of the calls made in this thread's current answer's callbacks go on {@code next}. */
    static void followOnCallsTo(final Connection next)
    {
        ANSWERING.set(next);
    }

    /** The set this connection belongs to (one per client): another client's calls never take it. */
    ConnectionSet owner()
    {
        return owner;
    }

    void owner(final ConnectionSet set)
    {
        owner = set;
    }

    /** {@code host:port} as nodes name each other in NOT_LEADER hints and shard maps. */
    String hostPort()
    {
        return hostPort;
    }

    EventLoop loop()
    {
        return loop;
    }

    /** Cheap enough to ask on every call (a volatile read). */
    boolean isActive()
    {
        return link.isActive();
    }

    String lastError()
    {
        return link.lastError();
    }

    /** SDK instances the node last reported, 0 before any report. */
    int fleetInstances()
    {
        return subscription.fleetInstances();
    }

    /** Queues a call from any thread; the event loop batches and sends it. */
    void submit(final PendingCall call)
    {
        call.connection = this;
        batcher.submit(call);
    }

    CompletableFuture<Void> ping(final long deadlineNanos)
    {
        return request(MessageType.PING, null, deadlineNanos);
    }

    /**
     * A request answered by an empty frame (PONG, DEGRADED_REPORT_RESULT), a RESULT with one
     * RELEASED record (RELEASE) or an ERROR, within the deadline. Any thread.
     */
    CompletableFuture<Void> request(final int type, final byte[] body, final long deadlineNanos)
    {
        final CompletableFuture<Void> result = new CompletableFuture<>();
        loop.execute(() ->
        {
            final Channel ch = link.channel();
            if (ch == null || !ch.isActive())
            {
                result.completeExceptionally(unavailable());
                return;
            }
            final long correlationId = inFlight.newCorrelationId();
            inFlight.track(correlationId, result, deadlineNanos);
            final ByteBuf buf = ch.alloc().buffer(Frame.HEADER_LENGTH + (body == null ? 0 : body.length));
            final int start = Frame.begin(buf, type, correlationId);
            if (body != null)
            {
                buf.writeBytes(body);
            }
            Frame.finish(buf, start);
            link.writeAndFlush(ch, buf);
        });
        return result;
    }

    /** Asks the node which node leads each shard (answered with correlation id 0). Any thread. */
    void requestShardMap()
    {
        loop.execute(() ->
        {
            final Channel ch = link.channel();
            if (ch != null && !closed && Features.has(nodeFeatures, Features.SHARD_MAP))
            {
                askShardMap(ch);
            }
        });
    }

    /** Frames sent and neither answered nor dropped yet (read on the I/O thread; for tests). */
    int framesAwaitingAnswer()
    {
        return CompletableFuture.supplyAsync(inFlight::size, loop).join();
    }

    void close()
    {
        closed = true;
        loop.execute(() ->
        {
            subscription.close();
            link.close();
            failAll(new LimiterUnavailableException("limiter client closed"));
        });
    }

    private void askShardMap(final Channel ch)
    {
        final ByteBuf request = ch.alloc().buffer(Frame.HEADER_LENGTH);
        Frame.finish(request, Frame.begin(request, MessageType.SHARD_MAP, 0));
        link.writeAndFlush(ch, request);
    }

    private LimiterUnavailableException unavailable()
    {
        return new LimiterUnavailableException("not connected to limiter " + hostPort + " (reconnecting; last error: " +
            link.lastError() + ")");
    }

    private void failAll(final Throwable cause)
    {
        inFlight.failAll(cause);
        batcher.failQueued(cause);
    }

    @Override
    public ChannelHandler newFrameHandler()
    {
        return new FrameAdapter(this, hostPort);
    }

    /**
     * Says what this SDK can do; the subscription and the shard map wait for the node's answer.
     * Calls go out at once: they need no feature.
     */
    @Override
    public void opened(final Channel channel)
    {
        nodeFeatures = 0;
        subscription.linkOpened();
        sayHello(channel);
        batcher.drainIfQueued();
    }

    /**
     * Sends a HELLO and, should no readable answer come within the connect timeout, another (a
     * node that refused it, or a lost answer): the link stays open for calls meanwhile.
     */
    private void sayHello(final Channel channel)
    {
        final long id = inFlight.newCorrelationId();
        helloId = id;
        final ByteBuf hello = channel.alloc().buffer(Frame.HEADER_LENGTH + HelloCodec.BODY_LENGTH);
        HelloCodec.writeHello(hello, id, Features.SDK);
        link.writeAndFlush(channel, hello);
        loop.schedule(() ->
        {
            if (helloId == id && channel.isActive() && link.channel() == channel)
            {
                LOG.debug("limiter {}: no readable answer to HELLO within {} ms; asking again", hostPort,
                    helloTimeoutMillis);
                sayHello(channel);
            }
        }, helloTimeoutMillis, TimeUnit.MILLISECONDS);
    }

    @Override
    public void hello(final long correlationId, final long features)
    {
        if (correlationId == helloId)
        {
            greeted(features);
        }
    }

    /** The node's features are known: it is asked only for what it listed. */
    private void greeted(final long features)
    {
        helloId = 0;
        nodeFeatures = features;
        LOG.debug("{} offers {}", hostPort, Features.names(features));
        final Channel ch = link.channel();
        if (ch != null)
        {
            subscription.opened(ch, features);
            if (Features.has(features, Features.SHARD_MAP))
            {
                askShardMap(ch);
            }
        }
    }

    @Override
    public void lost(final String why)
    {
        failAll(new LimiterUnavailableException(why));
    }

    @Override
    public void idle()
    {
        ping(System.nanoTime() + keepAliveNanos).exceptionally(ignored -> null); // its answer is not awaited
    }

    @Override
    public void result(final ByteBuf frame, final long correlationId)
    {
        link.answered();
        final InFlightTable.Entry entry = inFlight.remove(correlationId);
        if (entry == null)
        {
            return; // answered after its deadline: the caller was already told
        }
        final Connection outer = ANSWERING.getIfExists();
        ANSWERING.set(this);
        try
        {
            results.answer(entry, frame, Frame.bodyOffset(frame), Frame.frameEnd(frame), events.hotKeys());
        }
        finally
        {
            ANSWERING.set(outer);
        }
    }

    @Override
    public void error(final long correlationId, final int code, final String message)
    {
        final ErrorCode known = ErrorCode.ofOrNull(code);
        if (correlationId != 0 && correlationId == helloId)
        {
            if (known == ErrorCode.UNKNOWN_TYPE)
            {
                greeted(Features.BEFORE_HELLO); // a node from before HELLO
            }
            else
            {
                // Asked again when the HELLO's wait ends (sayHello), on the same link.
                LOG.warn("limiter {} refused this SDK's HELLO ({}: {}); asking again in {} ms", hostPort, known,
                    message,
                    helloTimeoutMillis);
            }
            return;
        }
        if (correlationId == 0 && known == ErrorCode.UNKNOWN_TYPE)
        {
            LOG.debug("limiter {} does not serve a request this SDK made: {}", hostPort, message);
            return; // a node from before HELLO asked for a shard map it does not serve: routing stays as it is
        }
        if (correlationId == 0 && subscription.refused(code, message))
        {
            return; // the answer to the policy subscription: calls are unaffected
        }
        final InFlightTable.Entry entry = inFlight.remove(correlationId);
        if (entry != null && known == ErrorCode.NOT_LEADER && entry.request == null)
        {
            // Not decided (a STRICT batch it could not confirm may have charged tokens: a retry can
            // only under-admit): the calls go to the leader, within their deadlines.
            link.answered();
            events.refusals().notLeader(this, entry.calls, message);
        }
        else if (entry != null && known == ErrorCode.OVERLOADED && entry.request == null)
        {
            events.refusals().overloaded(this, entry.calls, message);
        }
        else if (entry != null)
        {
            entry.fail(new LimiterRequestException(known, message));
        }
        else if (correlationId != 0 && (known == ErrorCode.NOT_LEADER || known == ErrorCode.OVERLOADED))
        {
            // A late refusal of a frame whose calls were settled already (their deadline passed).
            LOG.debug("limiter {} reported {} for a frame no longer waited for: {}", hostPort, known, message);
        }
        else
        {
            LOG.warn("limiter {} reported {}: {}", hostPort, known, message);
        }
    }

    @Override
    public void done(final long correlationId)
    {
        final InFlightTable.Entry entry = inFlight.remove(correlationId);
        if (entry != null && entry.request != null)
        {
            entry.request.complete(null);
        }
    }

    @Override
    public void policies(final PoliciesCodec.Result result)
    {
        subscription.received(result);
    }

    @Override
    public void shardMap(final ShardMap map)
    {
        events.shardMaps().accept(map);
    }

    @Override
    public void fleet(final int instances)
    {
        subscription.fleet(instances);
    }

    @Override
    public void unreadable(final String why)
    {
        link.lastError(why);
    }
}
