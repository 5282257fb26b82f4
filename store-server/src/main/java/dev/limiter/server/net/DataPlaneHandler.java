package dev.limiter.server.net;

import dev.limiter.protocol.AcquireDecoder;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.ErrorCodec;
import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.HelloCodec;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ReleaseCodec;
import dev.limiter.protocol.ShardMap;
import dev.limiter.server.cluster.ReplicationGroups;
import dev.limiter.server.control.ActiveExemptions;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.engine.FrameResponder;
import dev.limiter.server.engine.FrameRouter;
import dev.limiter.server.engine.Shard;
import dev.limiter.server.metrics.ServerMetrics;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.concurrent.FastThreadLocal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Supplier;

/**
 * One data-plane connection: decodes frames, hands decision frames to the engine's
 * {@link FrameRouter} and the others, by type, to their owners ({@link ControlFrame}: the
 * {@link PolicyPublisher} for POLICIES, {@link SdkReports} for SDK reports, and PING, STATUS and the
 * refusal of MEMBERS here). Runs on
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
    private final Supplier<PolicyControl> control;
    private final List<Shard> shards;
    private final ServerMetrics metrics;
    private final FastThreadLocal<FrameRouter> routers;
    /** Cluster mode only (else null): who may decide, and where each group's leader is. */
    private final ReplicationGroups groups;
    private final Supplier<String> statusJson;
    /** Owners of the frames that are not decisions, by message type (null: not served). */
    private final ControlFrame[] controlFrames = new ControlFrame[256];
    /** Frames of this connection being decided; above the cap, reading pauses (event loop only). */
    private int framesInFlight;
    private boolean pausedForFrames;
    /** Whether the peer's HELLO listed {@link Features#DECISION_IDS}: its answers then carry decision ids. */
    private boolean decisionIds;
    static final int MAX_FRAMES_IN_FLIGHT = 256;

    public DataPlaneHandler(
        final Supplier<PolicySetIndex> policies,
        final Supplier<ActiveExemptions> exemptions,
        final PolicyPublisher publisher,
        final Supplier<PolicyControl> control,
        final List<Shard> shards,
        final ServerMetrics metrics,
        final FastThreadLocal<FrameRouter> routers,
        final ReplicationGroups groups,
        final Supplier<String> statusJson,
        final SdkReportGate reportGate)
    {
        controlFrames[MessageType.POLICIES] = publisher::answer;
        controlFrames[MessageType.DEGRADED_REPORT] = new SdkReports(control, groups == null ? null : groups.control(), reportGate, metrics);
        controlFrames[MessageType.STATUS] = this::status;
        controlFrames[MessageType.PING] = DataPlaneHandler::pong;
        controlFrames[MessageType.HELLO] = this::hello;
        controlFrames[MessageType.MEMBERS] = this::noMembershipHere;
        controlFrames[MessageType.SHARD_MAP] = this::shardMap;
        this.groups = groups;
        this.statusJson = statusJson;
        this.policies = policies;
        this.exemptions = exemptions;
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
            if (type == MessageType.ACQUIRE || type == MessageType.BATCH_ACQUIRE)
            {
                acquire(ctx, frame, correlationId, type == MessageType.ACQUIRE, false);
                return;
            }
            if (type == MessageType.RELEASE)
            {
                acquire(ctx, frame, correlationId, true, true);
                return;
            }
            final ControlFrame owner = controlFrames[type];
            if (owner == null)
            {
                error(ctx, correlationId, ErrorCode.UNKNOWN_TYPE, "message type " + MessageType.name(type) +
                    " is not a request this node serves (ACQUIRE=1, BATCH_ACQUIRE=3, PING=5, STATUS=8, MEMBERS=10, POLICIES=12, DEGRADED_REPORT=14, SHARD_MAP=17, RELEASE=19)");
                return;
            }
            owner.handle(ctx, frame, correlationId, this);
        }
        finally
        {
            frame.release();
        }
    }

    /** An ACQUIRE, BATCH_ACQUIRE or RELEASE (a lease id, then an acquire body of one entry). */
    private void acquire(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final boolean single,
        final boolean release)
    {
        final long start = System.nanoTime();
        metrics.decisionFrame();
        final FrameRouter router = routers.get();
        final AcquireDecoder decoder = router.decoder();
        int body = Frame.bodyOffset(frame);
        long leaseId = 0;
        int leaseCheck = 0;
        if (release)
        {
            final String problem = ReleaseCodec.prefixProblem(body, Frame.frameEnd(frame));
            if (problem != null)
            {
                error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, problem);
                return;
            }
            leaseId = ReleaseCodec.leaseId(frame, body);
            leaseCheck = ReleaseCodec.check(frame, body);
            body += ReleaseCodec.PREFIX_LENGTH;
        }
        final String malformed = decoder.wrap(frame, body, Frame.frameEnd(frame), single);
        if (malformed != null)
        {
            error(ctx, correlationId, decoder.errorCode(), malformed);
            return;
        }
        if (groups != null && !groups.canDecideAny())
        {
            notLeader(ctx, correlationId, -1); // a follower of every group never decides: send the caller to a leader
            return;
        }
        router.route(ctx, this, policies.get(), exemptions.get(), shards, correlationId, start, single, release, leaseId, leaseCheck);
    }

    private void status(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final FrameResponder answers)
    {
        final ByteBuf status = ctx.alloc().buffer(512);
        final int start = Frame.begin(status, MessageType.STATUS_RESULT, correlationId);
        status.writeCharSequence(statusJson.get(), StandardCharsets.UTF_8);
        Frame.finish(status, start);
        ctx.writeAndFlush(status, ctx.voidPromise());
    }

    /** Which node leads each shard now (a single node: one group, no leader to name, so clients need not route). */
    private void shardMap(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final FrameResponder answers)
    {
        final ShardMap map = groups != null ? groups.shardMap() : new ShardMap(new int[shards.size()], new String[] {""});
        final ByteBuf out = ctx.alloc().buffer(64 + 2 * shards.size());
        final int start = Frame.begin(out, MessageType.SHARD_MAP_RESULT, correlationId);
        map.encode(out);
        Frame.finish(out, start);
        ctx.writeAndFlush(out, ctx.voidPromise());
    }

    private static void pong(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final FrameResponder answers)
    {
        final ByteBuf pong = ctx.alloc().buffer(Frame.HEADER_LENGTH);
        Frame.finish(pong, Frame.begin(pong, MessageType.PONG, correlationId));
        ctx.writeAndFlush(pong, ctx.voidPromise());
    }

    /** An SDK opening a connection: this node's features; of the SDK's, DECISION_IDS says what its answers carry. */
    private void hello(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final FrameResponder answers)
    {
        try
        {
            decisionIds = Features.has(HelloCodec.read(frame), Features.DECISION_IDS);
        }
        catch (final IllegalArgumentException e)
        {
            error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, e.getMessage());
            return;
        }
        final ByteBuf answer = ctx.alloc().buffer(Frame.HEADER_LENGTH + HelloCodec.RESULT_BODY_LENGTH);
        HelloCodec.writeResult(answer, correlationId, Features.NODE);
        ctx.writeAndFlush(answer, ctx.voidPromise());
    }

    /** Anybody who can reach this port may send anything: nothing here changes the cluster. */
    private void noMembershipHere(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final FrameResponder answers)
    {
        metrics.refused("members-on-data-port");
        error(ctx, correlationId, ErrorCode.FORBIDDEN, "the data port does not change membership; use the " +
            "authenticated admin API (./limiter cluster add|remove, or PUT/DELETE /v1/members/{id} with the " +
            "admin token); nothing changed");
    }

    /** Answers NOT_LEADER with the data address of the refusing shard's leader (empty while there is none). */
    @Override
    public void notLeader(final ChannelHandlerContext ctx, final long correlationId, final int shard)
    {
        metrics.redirected();
        final ByteBuf out = ctx.alloc().buffer(64);
        final String hint = groups == null ? "" : (shard >= 0 ? groups.ofShard(shard) : groups.control()).redirectAddress();
        ErrorCodec.encode(out, correlationId, ErrorCode.NOT_LEADER, hint);
        ctx.writeAndFlush(out, ctx.voidPromise());
    }

    @Override
    public boolean wantsDecisionIds()
    {
        return decisionIds;
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
        if (root instanceof ForeignProtocolException foreign)
        {
            metrics.protocolError();
            if (foreign.http())
            {
                // Told in its own protocol, so that curl or a browser shows it.
                final byte[] body = (foreign.getMessage() + "\n").getBytes(StandardCharsets.UTF_8);
                final ByteBuf out = ctx.alloc().buffer(160 + body.length);
                out.writeCharSequence("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                    body.length + "\r\nConnection: close\r\n\r\n", StandardCharsets.US_ASCII);
                out.writeBytes(body);
                ctx.writeAndFlush(out).addListener(f -> ctx.close());
            }
            else
            {
                ctx.close(); // a TLS client cannot read a clear answer; it reports a failed handshake
            }
        }
        else if (root instanceof TooLongFrameException)
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
