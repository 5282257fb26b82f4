package dev.limiter.bench.jmh;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.FrameRouter;
import dev.limiter.server.engine.MonotonicClock;
import dev.limiter.server.engine.Shard;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.net.DataPlaneHandler;
import dev.limiter.server.net.FrameDecoder;
import dev.limiter.server.net.PolicyPublisher;
import dev.limiter.server.net.SdkReportGate;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.FastThreadLocal;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A node's decision path for one acquire frame, without the network: the frame is decoded, routed
 * ({@link FrameRouter}), decided by a {@link Shard} owned by the channel's event loop, and its
 * answer encoded, on the data port's own pipeline ({@link FrameDecoder}, {@link DataPlaneHandler})
 * over an {@link EmbeddedChannel}, so every step runs inline on the benchmark's thread. Time is
 * per frame of {@code entries} decisions (divide by {@code entries} for a decision); the clock moves
 * 1 us per frame; frames cycle through {@code tenants} tenants of one TENANT-scoped policy that grants everything.
 * <p>
 * {@code ids} is whether the peer's HELLO listed {@link Features#DECISION_IDS} (an answer then
 * carries the lease, refusal and decision-id sections); {@code shadow} adds a SHADOW version of the
 * policy, evaluated beside it and compared per tenant and route.
 *
 * <pre>./limiter jmh DecisionPathBenchmark -prof gc
 * ./limiter jmh DecisionPathBenchmark -p entries=256 -p ids=false,true -p shadow=false -f 3</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = { "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "-Dagrona.disable.bounds.checks=true" })
public class DecisionPathBenchmark
{
    private static final int FRAMES = 64;

    /** Entries per frame: 16 is what 50 connections x 16 pipelined calls send, 256 what 4 x 256 do. */
    @Param({ "16", "256" })
    int entries;

    /** Whether the answers carry decision ids (the peer's HELLO listed DECISION_IDS). */
    @Param({ "false", "true" })
    boolean ids;

    /** Whether a SHADOW version of the policy is evaluated beside each decision. */
    @Param({ "false" })
    boolean shadow;

    @Param({ "10000" })
    int tenants;

    private final ByteBuf[] frames = new ByteBuf[FRAMES];
    private EmbeddedChannel channel;
    private Shard shard;
    private long nanos = TimeUnit.SECONDS.toNanos(1_000);
    private int next;

    @Setup(Level.Trial)
    public void start() throws Exception
    {
        final PolicyState policies = new PolicyState(1);
        final PolicySet.Builder set = PolicySet.newBuilder();
        JsonFormat.parser().merge(policySet(shadow), set);
        final PolicyState.Outcome bootstrap = policies.apply(PolicyState.command("bench", 0).setBootstrap(set).build());
        if (bootstrap.status() != PolicyState.Status.OK)
        {
            throw new IllegalStateException("the benchmark's policy set was refused: " + bootstrap);
        }
        final ServerMetrics metrics = new ServerMetrics();
        channel = new EmbeddedChannel();
        final MonotonicClock clock = () -> nanos;
        shard = new Shard(0, 1, 1 << 20, 64 << 20, clock, (policy, key, offset, length) -> null,
            (EventLoop)channel.eventLoop());
        final FastThreadLocal<FrameRouter> routers = new FastThreadLocal<>()
        {
            @Override
            protected FrameRouter initialValue()
            {
                return new FrameRouter(metrics);
            }
        };
        final PolicyControl control = new PolicyControl(policies, null, 1);
        final Runnable countNothing = () ->
        {
        };
        final PolicyPublisher publisher = new PolicyPublisher(policies, 1 << 20, countNothing);
        channel.pipeline().addLast(new FrameDecoder(1 << 24, null), new DataPlaneHandler(policies::index,
            policies::activeExemptions, publisher, () -> control, List.of(shard), metrics, routers, null, () -> "{}",
            new SdkReportGate()));

        final ByteBuf hello = PooledByteBufAllocator.DEFAULT.buffer();
        HelloCodec.writeHello(hello, 1, ids ? Features.SDK : Features.SDK & ~Features.DECISION_IDS);
        channel.writeInbound(hello);
        ((ByteBuf)channel.readOutbound()).release();

        int tenant = 0;
        for (int f = 0; f < FRAMES; f++)
        {
            final ByteBuf frame = PooledByteBufAllocator.DEFAULT.directBuffer();
            final int start = AcquireCodec.beginBatch(frame, MessageType.BATCH_ACQUIRE, 2 + f);
            for (int e = 0; e < entries; e++)
            {
                tenant = (tenant + 7919) % tenants;
                AcquireCodec.appendEntry(frame, 1,
                    AcquireCodec.encodeFields("tenant-" + tenant, "", "", "/v1/orders", "", ""));
            }
            AcquireCodec.finishBatch(frame, start, entries);
            frames[f] = frame;
        }
        final ByteBuf first = decide();
        try
        {
            final int at = first.readerIndex();
            if (first.getUnsignedShort(at + Frame.HEADER_LENGTH) != entries
                || !ResultCodec.allowed(first, ResultCodec.recordOffset(at, entries - 1)))
            {
                throw new IllegalStateException("the benchmark's first frame was not answered with " + entries
                    + " grants: " + ByteBufUtil.hexDump(first, at, Math.min(first.readableBytes(), 128)));
            }
        }
        finally
        {
            first.release();
        }
    }

    @TearDown(Level.Trial)
    public void stop()
    {
        for (final ByteBuf frame : frames)
        {
            frame.release();
        }
        channel.finishAndReleaseAll();
        shard.stop();
    }

    /** One frame of {@code entries} decisions, answered. */
    @Benchmark
    public int decideFrame()
    {
        final ByteBuf answer = decide();
        final int bytes = answer.readableBytes();
        answer.release();
        return bytes;
    }

    private ByteBuf decide()
    {
        nanos += 1_000;
        final ByteBuf frame = frames[next];
        next = (next + 1) & (FRAMES - 1);
        channel.writeInbound(frame.retainedDuplicate());
        return channel.readOutbound();
    }

    private static String policySet(final boolean shadow)
    {
        return "{\"version\":1,"
            + "\"defaultPolicy\":{\"id\":\"default\",\"rate\":1,\"burst\":1,\"owner\":\"bench\"},"
            + "\"policies\":["
            + "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders\"},\"rate\":1000000000,\"period\":\"1s\","
            + "\"burst\":1000000000,\"scope\":\"TENANT\",\"owner\":\"bench\"}"
            + (shadow ? ",{\"id\":\"orders-next\",\"selector\":{\"route\":\"/v1/orders\"},\"rate\":500000000,"
                + "\"period\":\"1s\",\"burst\":500000000,\"scope\":\"TENANT\",\"mode\":\"SHADOW\",\"owner\":\"bench\"}"
                : "")
            + "]}";
    }
}
