package dev.limiter.server.testing;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.FrameRouter;
import dev.limiter.server.engine.RejectedDecisions;
import dev.limiter.server.engine.Shard;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.net.DataPlaneHandler;
import dev.limiter.server.net.FrameDecoder;
import dev.limiter.server.net.PolicyPublisher;
import dev.limiter.server.net.SdkReportGate;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.FastThreadLocal;

import java.util.ArrayList;
import java.util.List;

/**
 * Shards behind the data port's pipeline ({@link FrameDecoder}, {@link DataPlaneHandler}) on an
 * {@link EmbeddedChannel} whose event loop owns every shard, so each frame is decided inline, on the test's
 * thread, at the time of the {@link ManualClock} the test moves. Policies are bootstrapped from JSON. Close it
 * to release what the channel still holds and stop the shards.
 */
public final class EmbeddedDataPlane implements AutoCloseable
{
    private static final int MAX_FRAME_BYTES = 1 << 20;

    private final PolicyState policies = new PolicyState(1);
    private final ServerMetrics metrics = new ServerMetrics();
    private final List<Shard> shards = new ArrayList<>();
    private final EmbeddedChannel channel = new EmbeddedChannel();

    /**
     * @param policiesJson a policy set in its JSON form, bootstrapped at version 1
     * @param shardCount   how many shards the channel's event loop owns
     * @param clock        the shards' clock
     * @param rejections   the log every frame samples its rejections into
     */
    public EmbeddedDataPlane(final String policiesJson, final int shardCount, final ManualClock clock,
        final RejectedDecisions rejections)
    {
        final PolicyState.Status bootstrapped = policies.apply(PolicyState.command("test", 0)
            .setBootstrap(parse(policiesJson)).build()).status();
        if (bootstrapped != PolicyState.Status.OK)
        {
            throw new IllegalArgumentException("the policies were refused: " + bootstrapped);
        }
        for (int s = 0; s < shardCount; s++)
        {
            shards.add(new Shard(s, shardCount, 1024, 64 * 1024, clock, (policy, key, offset, length) -> null,
                channel.eventLoop()));
        }
        final FastThreadLocal<FrameRouter> routers = new FastThreadLocal<>()
        {
            @Override
            protected FrameRouter initialValue()
            {
                return new FrameRouter(metrics, rejections);
            }
        };
        final PolicyControl control = new PolicyControl(policies, null, 1);
        final PolicyPublisher publisher = new PolicyPublisher(policies, MAX_FRAME_BYTES,
            () -> metrics.refused("sdk-instance-ids-per-address"));
        channel.pipeline().addLast(new FrameDecoder(MAX_FRAME_BYTES, null), new DataPlaneHandler(policies::index,
            policies::activeExemptions, publisher, () -> control, shards, metrics, routers, null, () -> "{}",
            new SdkReportGate()));
    }

    /** As {@link #EmbeddedDataPlane(String, int, ManualClock, RejectedDecisions)}, rejections in a log of its own. */
    public EmbeddedDataPlane(final String policiesJson, final int shardCount, final ManualClock clock)
    {
        this(policiesJson, shardCount, clock, new RejectedDecisions());
    }

    /** An ACQUIRE frame of one entry: {@code cost} for {@code tenant} on {@code route}. */
    public static ByteBuf acquireFrame(final long correlation, final String tenant, final String route,
        final int cost)
    {
        final ByteBuf frame = Unpooled.buffer();
        final int start = AcquireCodec.beginBatch(frame, MessageType.ACQUIRE, correlation);
        AcquireCodec.appendEntry(frame, cost, AcquireCodec.encodeFields(tenant, "", "", route, "", ""));
        AcquireCodec.finishBatch(frame, start, 1);
        return frame;
    }

    /**
     * Writes {@code frame} in, runs what the shards queued and returns the first frame written back (the
     * caller releases it), or null when nothing was.
     */
    public ByteBuf exchange(final ByteBuf frame)
    {
        channel.writeInbound(frame);
        channel.runPendingTasks();
        return channel.readOutbound();
    }

    /** Runs the tasks queued on the channel's event loop (a shard publishing its table, say). */
    public void runPendingTasks()
    {
        channel.runPendingTasks();
    }

    public PolicyState policies()
    {
        return policies;
    }

    /** The ordinal of the policy {@code id} in the current set. */
    public int ordinal(final String id)
    {
        return policies.index().policies().stream().filter(p -> p.id().equals(id)).findFirst()
            .orElseThrow(() -> new IllegalArgumentException("no policy " + id)).ordinal();
    }

    public List<Shard> shards()
    {
        return shards;
    }

    /** The first shard (the only one of a one-shard plane). */
    public Shard shard()
    {
        return shards.get(0);
    }

    public EmbeddedChannel channel()
    {
        return channel;
    }

    @Override
    public void close()
    {
        channel.finishAndReleaseAll();
        shards.forEach(Shard::stop);
    }

    private static PolicySet parse(final String json)
    {
        final PolicySet.Builder set = PolicySet.newBuilder();
        try
        {
            JsonFormat.parser().merge(json, set);
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalArgumentException("not a policy set: " + e.getMessage(), e);
        }
        return set.build();
    }
}
