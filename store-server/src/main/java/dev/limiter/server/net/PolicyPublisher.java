package dev.limiter.server.net;

import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.FleetCodec;
import dev.limiter.protocol.PoliciesCodec;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.FrameResponder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Serves the policy set in force to SDKs (POLICIES) and pushes every new set to the connections
 * that subscribed, as soon as this node has applied it. The encoded set is cached per set version.
 * It also counts the SDK instances subscribed (FLEET), by which SDKs split fleet-wide emergency
 * budgets.
 */
public final class PolicyPublisher
{
    private final PolicyState state;
    private final int maxFrameBytes;
    private final ChannelGroup subscribers = new DefaultChannelGroup("limiter-policy-subscribers", GlobalEventExecutor.INSTANCE);
    private volatile Encoded encoded;
    private long pushedVersion = -1;
    static final long FLEET_PUSH_DELAY_MILLIS = 200;
    /** SDK instance id by subscribed connection. */
    private final ConcurrentHashMap<Channel, String> instances = new ConcurrentHashMap<>();
    private final AtomicBoolean fleetPushScheduled = new AtomicBoolean();
    /** Touched only by the push task (one at a time). */
    private volatile int pushedFleet = -1;
    private final AtomicBoolean newSubscriber = new AtomicBoolean();

    /** The set in force, serialized once per version. */
    private record Encoded(long version, byte[] set)
    {
    }

    /** Most distinct SDK instance ids counted from one client address. */
    public static final int MAX_INSTANCES_PER_ADDRESS = 64;
    private final Runnable refusals;

    /**
     * @param refusals counts an instance id that did not count (its address has
     *                 {@link #MAX_INSTANCES_PER_ADDRESS} already)
     */
    public PolicyPublisher(final PolicyState state, final int maxFrameBytes, final Runnable refusals)
    {
        this.refusals = refusals;
        this.state = state;
        this.maxFrameBytes = maxFrameBytes;
        state.onChange(this::changed);
    }

    /**
     * @param instanceId the SDK instance behind this connection, or null: counted for FLEET, and
     *                   the connection is told the count within {@link #FLEET_PUSH_DELAY_MILLIS} ms
     *                   and whenever it changes (every subscriber is told the same count)
     */
    void subscribe(final Channel channel, final String instanceId)
    {
        subscribers.add(channel); // removed by the group when the channel closes
        if (instanceId == null || instances.containsKey(channel))
        {
            return;
        }
        if (!register(channel, instanceId))
        {
            refusals.run(); // still subscribed for policies; its id just does not count
            return;
        }
        channel.closeFuture().addListener(closed ->
        {
            instances.remove(channel);
            fleetChanged();
        });
        newSubscriber.set(true); // it has not been told any count yet: the next push goes out even if the count is unchanged
        fleetChanged();
    }

    /**
     * Counts this connection's instance id, unless its address has too many already: at most
     * {@link #MAX_INSTANCES_PER_ADDRESS} distinct ids per client address, so a client cannot shrink
     * every instance's emergency budget by making ids up (FLEET is at most that times the number
     * of client addresses, and never more than the open connections).
     */
    private synchronized boolean register(final Channel channel, final String instanceId)
    {
        final Object address = hostOf(channel);
        final Set<String> sameAddress = new HashSet<>();
        instances.forEach((other, id) ->
        {
            if (address.equals(hostOf(other)))
            {
                sameAddress.add(id);
            }
        });
        if (!sameAddress.contains(instanceId) && sameAddress.size() >= MAX_INSTANCES_PER_ADDRESS)
        {
            return false;
        }
        instances.put(channel, instanceId);
        return true;
    }

    private static Object hostOf(final Channel channel)
    {
        final SocketAddress remote = channel.remoteAddress();
        return remote instanceof InetSocketAddress inet && inet.getAddress() != null ? inet.getAddress() : String.valueOf(remote);
    }

    /** Distinct SDK instances subscribed here (an SDK has several connections per node). */
    public int instanceCount()
    {
        return (int)instances.values().stream().distinct().count();
    }

    private static ByteBuf fleet(final ByteBufAllocator alloc, final int count)
    {
        final ByteBuf out = alloc.buffer(FleetCodec.FRAME_LENGTH);
        FleetCodec.write(out, count);
        return out;
    }

    /**
     * Counts change in bursts (a fleet restarting): the new count goes out at most every
     * {@link #FLEET_PUSH_DELAY_MILLIS} ms, to every subscriber, if it changed since the last push or
     * a connection subscribed since (so no subscriber keeps a count it alone was told).
     */
    private void fleetChanged()
    {
        if (!fleetPushScheduled.compareAndSet(false, true))
        {
            return;
        }
        GlobalEventExecutor.INSTANCE.schedule(() ->
        {
            fleetPushScheduled.set(false);
            final boolean someoneNew = newSubscriber.getAndSet(false);
            final int count = instanceCount();
            if (count == pushedFleet && !someoneNew)
            {
                return;
            }
            pushedFleet = count;
            for (final Channel channel : instances.keySet())
            {
                channel.writeAndFlush(fleet(channel.alloc(), count), channel.voidPromise());
            }
        }, FLEET_PUSH_DELAY_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** {@code POLICIES_RESULT} with the set in force, or null when it does not fit in a frame. */
    ByteBuf encode(final ByteBufAllocator alloc, final long correlationId)
    {
        final Encoded current = current();
        final int length = PoliciesCodec.resultFrameLength(current.set());
        if (length > maxFrameBytes)
        {
            return null;
        }
        final ByteBuf out = alloc.buffer(length);
        PoliciesCodec.writeResult(out, correlationId, current.version(), current.set());
        return out;
    }

    private Encoded current()
    {
        final Encoded cached = encoded;
        final long version = state.setVersion();
        if (cached != null && cached.version() == version)
        {
            return cached;
        }
        final Encoded fresh = new Encoded(version, state.inForce().toByteArray());
        encoded = fresh;
        return fresh;
    }

    /** On the thread that applied a change: push a new set version to every subscriber. */
    private synchronized void changed()
    {
        final long version = state.setVersion();
        if (version == pushedVersion || subscribers.isEmpty())
        {
            pushedVersion = version;
            return;
        }
        pushedVersion = version;
        for (final Channel channel : subscribers)
        {
            final ByteBuf push = encode(channel.alloc(), 0);
            if (push != null)
            {
                channel.writeAndFlush(push, channel.voidPromise());
            }
        }
    }

    /**
     * Answers a POLICIES request (the frame): the set in force now; with the subscribe flag, every
     * later one too, and with an instance id, the FLEET count of SDK instances.
     */
    void answer(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final FrameResponder answers)
    {
        final PoliciesCodec.Request request;
        try
        {
            request = PoliciesCodec.readRequest(frame);
        }
        catch (final IllegalArgumentException malformed)
        {
            answers.error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, malformed.getMessage());
            return;
        }
        final ByteBuf answer = encode(ctx.alloc(), correlationId);
        if (answer == null)
        {
            answers.error(ctx, correlationId, ErrorCode.INTERNAL, "the policy set does not fit in one frame; read it from the admin API");
            return;
        }
        ctx.writeAndFlush(answer, ctx.voidPromise());
        if (request.subscribe())
        {
            subscribe(ctx.channel(), request.instanceId());
        }
    }
}
