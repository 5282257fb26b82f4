package dev.limiter.server.net;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.limiter.protocol.AcquireDecoder;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.DescriptorField;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.IpAddresses;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.control.ActiveExemptions;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.FrameResponder;
import dev.limiter.server.engine.FrameRouter;
import dev.limiter.server.engine.FrameWork;
import dev.limiter.server.engine.Shard;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.KeyHash;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.concurrent.FastThreadLocal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Supplier;

/**
 * One data-plane connection: decodes frames, hands decision frames to the engine's
 * {@link FrameRouter} and answers the rest (PING, STATUS, POLICIES, SDK reports, refusals). Runs on
 * the connection's event loop. Requests pipelined on one connection are answered in completion
 * order, matched by correlation id. Bad input gets an ERROR frame; input that breaks framing closes
 * the connection. Reading pauses while the peer does not read its answers or too many of its frames
 * are being decided.
 */
public final class DataPlaneHandler extends ChannelInboundHandlerAdapter implements FrameResponder
{
    private static final Logger LOG = LoggerFactory.getLogger(DataPlaneHandler.class);

    private final Supplier<PolicySetIndex> policies;
    private final Supplier<ActiveExemptions> exemptions;
    private final PolicyPublisher publisher;
    private final Supplier<PolicyControl> control;
    private final List<Shard> shards;
    private final ServerMetrics metrics;
    private final FastThreadLocal<FrameRouter> routers;
    /** Cluster mode only (else null): who may decide, and where the leader is. */
    private final Replication replication;
    private final Supplier<String> statusJson;
    /** Node-wide allowance of SDK reports (every one is a log entry). */
    private final SdkReportGate reportGate;
    /** This connection's allowance of SDK reports; created at its first report (event loop only). */
    private AdmissionBucket reportsFromThisConnection;
    static final int REPORTS_PER_CONNECTION_PER_SECOND = 1;
    /** An SDK back from an outage sends its pending windows at once (it keeps up to 64). */
    public static final int REPORTS_PER_CONNECTION_BURST = 70;
    /** Frames of this connection being decided; above the cap, reading pauses (event loop only). */
    private int framesInFlight;
    private boolean pausedForFrames;
    static final int MAX_FRAMES_IN_FLIGHT = 256;

    public DataPlaneHandler(
        final Supplier<PolicySetIndex> policies,
        final Supplier<ActiveExemptions> exemptions,
        final PolicyPublisher publisher,
        final Supplier<PolicyControl> control,
        final List<Shard> shards,
        final ServerMetrics metrics,
        final FastThreadLocal<FrameRouter> routers,
        final Replication replication,
        final Supplier<String> statusJson,
        final SdkReportGate reportGate)
    {
        this.reportGate = reportGate;
        this.replication = replication;
        this.statusJson = statusJson;
        this.policies = policies;
        this.exemptions = exemptions;
        this.publisher = publisher;
        this.control = control;
        this.shards = shards;
        this.metrics = metrics;
        this.routers = routers;
    }

    @Override
    public void channelActive(final ChannelHandlerContext ctx) throws Exception
    {
        metrics.connectionOpened();
        super.channelActive(ctx);
    }

    @Override
    public void channelRead(final ChannelHandlerContext ctx, final Object msg)
    {
        final ByteBuf frame = (ByteBuf)msg;
        try
        {
            if (frame.readableBytes() < Frame.HEADER_LENGTH)
            {
                // The length field was readable but too small to hold a header: the peer is not framing.
                failAndClose(ctx, 0, ErrorCode.MALFORMED_FRAME,
                    "frame length " + (frame.readableBytes() - Frame.LENGTH_FIELD_LENGTH) + " is below the header's " +
                    Frame.MIN_LENGTH_FIELD + " bytes");
                return;
            }
            final long correlationId = Frame.correlationId(frame);
            final int version = Frame.version(frame);
            if (version != Frame.VERSION)
            {
                error(ctx, correlationId, ErrorCode.UNSUPPORTED_VERSION,
                    "protocol version " + version + " is not supported; this node speaks version " + Frame.VERSION);
                return;
            }
            final int type = Frame.type(frame);
            switch (type)
            {
                case MessageType.ACQUIRE:
                case MessageType.BATCH_ACQUIRE:
                    acquire(ctx, frame, correlationId, type == MessageType.ACQUIRE);
                    break;
                case MessageType.STATUS:
                    final ByteBuf status = ctx.alloc().buffer(512);
                    final int start = Frame.begin(status, MessageType.STATUS_RESULT, correlationId);
                    status.writeCharSequence(statusJson.get(), StandardCharsets.UTF_8);
                    Frame.finish(status, start);
                    ctx.writeAndFlush(status, ctx.voidPromise());
                    break;
                case MessageType.MEMBERS:
                    // Anybody who can reach this port may send anything: nothing here changes the cluster.
                    metrics.refused("members-on-data-port");
                    error(ctx, correlationId, ErrorCode.FORBIDDEN, "the data port does not change membership; use the " +
                        "authenticated admin API (./limiter cluster add|remove, or PUT/DELETE /v1/members/{id} with the " +
                        "admin token); nothing changed");
                    break;
                case MessageType.POLICIES:
                    policies(ctx, frame, correlationId);
                    break;
                case MessageType.DEGRADED_REPORT:
                    degradedReport(ctx, frame, correlationId);
                    break;
                case MessageType.PING:
                    final ByteBuf pong = ctx.alloc().buffer(Frame.HEADER_LENGTH);
                    Frame.finish(pong, Frame.begin(pong, MessageType.PONG, correlationId));
                    ctx.writeAndFlush(pong, ctx.voidPromise());
                    break;
                default:
                    error(ctx, correlationId, ErrorCode.UNKNOWN_TYPE, "message type " + MessageType.name(type) +
                        " is not a request this node serves (ACQUIRE=1, BATCH_ACQUIRE=3, PING=5, STATUS=8, MEMBERS=10, POLICIES=12, DEGRADED_REPORT=14)");
                    break;
            }
        }
        finally
        {
            frame.release();
        }
    }

    private void acquire(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final boolean single)
    {
        final long start = System.nanoTime();
        final FrameRouter router = routers.get();
        final AcquireDecoder decoder = router.decoder();
        final String malformed = decoder.wrap(frame, Frame.bodyOffset(frame), Frame.frameEnd(frame), single);
        if (malformed != null)
        {
            error(ctx, correlationId, decoder.errorCode(), malformed);
            return;
        }
        if (replication != null && !replication.canDecide())
        {
            notLeader(ctx, correlationId); // a follower never decides: send the caller to the leader
            return;
        }
        router.route(ctx, this, policies.get(), exemptions.get(), shards, correlationId, start, single);
    }

    /**
     * POLICIES: the set in force now; with the subscribe flag, every later one too, and with an
     * instance id, the FLEET count of SDK instances (see PolicyPublisher).
     */
    private void policies(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId)
    {
        final int body = Frame.bodyOffset(frame);
        final int bodyLength = Frame.frameEnd(frame) - body;
        final int flags = bodyLength < 1 ? 0 : frame.getUnsignedByte(body);
        final boolean subscribe = (flags & 1) != 0;
        final boolean withInstance = (flags & 2) != 0;
        final int idLength = withInstance && bodyLength >= 2 ? frame.getUnsignedByte(body + 1) : 0;
        final String problem = bodyLength < 1 ? "is empty" :
            (flags & ~3) != 0 ? "has unknown flags " + Integer.toBinaryString(flags) :
            withInstance && !subscribe ? "names an instance without subscribing (bit 1 needs bit 0)" :
            withInstance && bodyLength < 2 ? "has no instance id length" :
            withInstance && idLength == 0 ? "has an instance id of 0 bytes" :
            bodyLength != (withInstance ? 2 + idLength : 1) ? "is " + bodyLength + " bytes where its flags say " +
                (withInstance ? 2 + idLength : 1) : null;
        if (problem != null)
        {
            error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, "POLICIES body " + problem +
                "; it is u8 flags (bit 0: subscribe, bit 1: an instance id follows as u8 length and 1-255 UTF-8 bytes)");
            return;
        }
        final ByteBuf answer = publisher.encode(ctx.alloc(), correlationId);
        if (answer == null)
        {
            error(ctx, correlationId, ErrorCode.INTERNAL, "the policy set does not fit in one frame; read it from the admin API");
            return;
        }
        ctx.writeAndFlush(answer, ctx.voidPromise());
        if (subscribe)
        {
            publisher.subscribe(ctx.channel(), withInstance ? frame.toString(body + 2, idLength, StandardCharsets.UTF_8) : null);
        }
    }

    /** DEGRADED_REPORT: an SDK's window of local decisions, into the audit log (through the leader). */
    private void degradedReport(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId)
    {
        final int bodyLength = Frame.frameEnd(frame) - Frame.bodyOffset(frame);
        if (bodyLength > MessageType.MAX_DEGRADED_REPORT_BYTES)
        {
            metrics.refused("sdk-report-invalid");
            error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, "DEGRADED_REPORT body is " + bodyLength + " bytes; at most " +
                MessageType.MAX_DEGRADED_REPORT_BYTES + " are taken");
            return;
        }
        final DegradedWindow window;
        try
        {
            window = DegradedWindow.parseFrom(
                ByteBuffer.wrap(ByteBufUtil.getBytes(frame, Frame.bodyOffset(frame), bodyLength)));
        }
        catch (final InvalidProtocolBufferException e)
        {
            metrics.refused("sdk-report-invalid");
            error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, "DEGRADED_REPORT body is not a DegradedWindow: " + e.getMessage());
            return;
        }
        final String problem = PolicyState.degradedWindowProblem(window);
        if (problem != null)
        {
            metrics.refused("sdk-report-invalid");
            error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, "DEGRADED_REPORT refused: " + problem);
            return;
        }
        if (replication != null && !replication.isLeader())
        {
            notLeader(ctx, correlationId); // only the leader appends: do not spend this connection's allowance here
            return;
        }
        // Every report becomes a log entry: bounded per connection and for the whole node.
        final long now = System.nanoTime();
        if (reportsFromThisConnection == null)
        {
            reportsFromThisConnection = new AdmissionBucket(REPORTS_PER_CONNECTION_PER_SECOND, REPORTS_PER_CONNECTION_BURST, now);
        }
        if (!reportsFromThisConnection.tryTake(now) || !reportGate.tryTake(now))
        {
            metrics.refused("sdk-report-rate");
            error(ctx, correlationId, ErrorCode.OVERLOADED, "this node takes at most " + REPORTS_PER_CONNECTION_PER_SECOND +
                " degraded-window report per second per connection (bursts of " + REPORTS_PER_CONNECTION_BURST + ") and " +
                SdkReportGate.PER_SECOND + " per second in all; keep the window and send it again later");
            return;
        }
        control.get().submit(PolicyState.command(window.getClient(), System.currentTimeMillis())
            .setDegraded(window).build()).whenComplete((outcome, failure) -> ctx.executor().execute(() ->
            {
                if (failure != null)
                {
                    notLeader(ctx, correlationId); // a follower, or leadership lost meanwhile: the SDK tries another node
                }
                else if (outcome.status() != PolicyState.Status.OK)
                {
                    error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, outcome.error().getError());
                }
                else
                {
                    final ByteBuf done = ctx.alloc().buffer(Frame.HEADER_LENGTH);
                    Frame.finish(done, Frame.begin(done, MessageType.DEGRADED_REPORT_RESULT, correlationId));
                    ctx.writeAndFlush(done, ctx.voidPromise());
                }
            }));
    }

    /** Answers NOT_LEADER with the leader's data address (empty while there is none). */
    @Override
    public void notLeader(final ChannelHandlerContext ctx, final long correlationId)
    {
        final ByteBuf out = ctx.alloc().buffer(64);
        ErrorCodec.encode(out, correlationId, ErrorCode.NOT_LEADER, replication == null ? "" : replication.leaderAddress());
        ctx.writeAndFlush(out, ctx.voidPromise());
    }

    @Override
    public void frameAccepted(final ChannelHandlerContext ctx)
    {
        if (++framesInFlight >= MAX_FRAMES_IN_FLIGHT && !pausedForFrames)
        {
            pausedForFrames = true;
            updateAutoRead(ctx);
        }
    }

    @Override
    public void frameCompleted(final ChannelHandlerContext ctx)
    {
        if (--framesInFlight <= MAX_FRAMES_IN_FLIGHT / 2 && pausedForFrames)
        {
            pausedForFrames = false;
            updateAutoRead(ctx);
        }
    }

    private void updateAutoRead(final ChannelHandlerContext ctx)
    {
        // Read while the peer reads its answers and not too many of its frames are being decided.
        ctx.channel().config().setAutoRead(ctx.channel().isWritable() && !pausedForFrames);
    }

    @Override
    public void error(final ChannelHandlerContext ctx, final long correlationId, final ErrorCode code, final String message)
    {
        metrics.protocolError();
        final ByteBuf out = ctx.alloc().buffer(64 + message.length());
        ErrorCodec.encode(out, correlationId, code, message);
        ctx.writeAndFlush(out, ctx.voidPromise());
    }

    private void failAndClose(final ChannelHandlerContext ctx, final long correlationId, final ErrorCode code, final String message)
    {
        metrics.protocolError();
        final ByteBuf out = ctx.alloc().buffer(64 + message.length());
        ErrorCodec.encode(out, correlationId, code, message);
        ctx.writeAndFlush(out).addListener(f -> ctx.close());
    }

    @Override
    public void channelWritabilityChanged(final ChannelHandlerContext ctx) throws Exception
    {
        // A peer that does not read its answers stops being read from: memory stays bounded.
        updateAutoRead(ctx);
        super.channelWritabilityChanged(ctx);
    }

    @Override
    public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause)
    {
        final Throwable root = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        if (root instanceof TooLongFrameException)
        {
            failAndClose(ctx, 0, ErrorCode.FRAME_TOO_LARGE, root.getMessage() + "; split the batch");
        }
        else if (root instanceof CorruptedFrameException)
        {
            failAndClose(ctx, 0, ErrorCode.MALFORMED_FRAME, root.getMessage());
        }
        else if (root instanceof IOException)
        {
            ctx.close(); // peer reset or went away
        }
        else
        {
            LOG.error("closing {} after an unexpected error", ctx.channel().remoteAddress(), cause);
            failAndClose(ctx, 0, ErrorCode.INTERNAL, String.valueOf(root));
        }
    }
}
