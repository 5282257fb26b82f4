package dev.limiter.server.net;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.server.cluster.Replication;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.FrameResponder;
import dev.limiter.server.metrics.ServerMetrics;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelHandlerContext;

import java.nio.ByteBuffer;
import java.util.function.Supplier;

/**
 * DEGRADED_REPORT on one connection: an SDK's window of local decisions, checked here and put into
 * the audit log through the leader. Every report becomes a log entry, so they are bounded per
 * connection and for the whole node ({@link SdkReportGate}); one instance per connection.
 */
public final class SdkReports implements ControlFrame
{
    static final int REPORTS_PER_CONNECTION_PER_SECOND = 1;
    /** An SDK back from an outage sends its pending windows at once (it keeps up to 64). */
    public static final int REPORTS_PER_CONNECTION_BURST = 70;

    private final Supplier<PolicyControl> control;
    /** Cluster mode only (else null). */
    private final Replication replication;
    private final SdkReportGate reportGate;
    private final ServerMetrics metrics;
    /** This connection's allowance; created at its first report (event loop only). */
    private AdmissionBucket reportsFromThisConnection;

    SdkReports(final Supplier<PolicyControl> control, final Replication replication, final SdkReportGate reportGate,
        final ServerMetrics metrics)
    {
        this.control = control;
        this.replication = replication;
        this.reportGate = reportGate;
        this.metrics = metrics;
    }

    @Override
    public void handle(final ChannelHandlerContext ctx, final ByteBuf frame, final long correlationId, final FrameResponder answers)
    {
        final int bodyLength = Frame.frameEnd(frame) - Frame.bodyOffset(frame);
        if (bodyLength > MessageType.MAX_DEGRADED_REPORT_BYTES)
        {
            metrics.refused("sdk-report-invalid");
            answers.error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, "DEGRADED_REPORT body is " + bodyLength + " bytes; at most " +
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
            answers.error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, "DEGRADED_REPORT body is not a DegradedWindow: " + e.getMessage());
            return;
        }
        final String problem = PolicyState.degradedWindowProblem(window);
        if (problem != null)
        {
            metrics.refused("sdk-report-invalid");
            answers.error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, "DEGRADED_REPORT refused: " + problem);
            return;
        }
        if (replication != null && !replication.isLeader())
        {
            answers.notLeader(ctx, correlationId, -1); // only the leader appends: do not spend this connection's allowance here
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
            answers.error(ctx, correlationId, ErrorCode.OVERLOADED, "this node takes at most " + REPORTS_PER_CONNECTION_PER_SECOND +
                " degraded-window report per second per connection (bursts of " + REPORTS_PER_CONNECTION_BURST + ") and " +
                SdkReportGate.PER_SECOND + " per second in all; keep the window and send it again later");
            return;
        }
        control.get().submit(PolicyState.command(window.getClient(), System.currentTimeMillis())
            .setDegraded(window).build()).whenComplete((outcome, failure) -> ctx.executor().execute(() ->
            {
                if (failure != null)
                {
                    answers.notLeader(ctx, correlationId, -1); // a follower, or leadership lost meanwhile: the SDK tries another node
                }
                else if (outcome.status() != PolicyState.Status.OK)
                {
                    answers.error(ctx, correlationId, ErrorCode.MALFORMED_FRAME, outcome.error().getError());
                }
                else
                {
                    final ByteBuf done = ctx.alloc().buffer(Frame.HEADER_LENGTH);
                    Frame.finish(done, Frame.begin(done, MessageType.DEGRADED_REPORT_RESULT, correlationId));
                    ctx.writeAndFlush(done, ctx.voidPromise());
                }
            }));
    }
}
