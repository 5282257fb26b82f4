package dev.limiter.envoy.api;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Bounds how long one HTTP request may take to arrive: from its first byte, the whole request (head
 * and body) must be read within the deadline, or the connection closes. A connection idle between
 * requests is left to the port's idle timeout. So a client that trickles bytes (slowloris) cannot
 * hold a connection slot, whatever token it has or lacks. One per connection, on its event loop.
 */
final class RequestDeadline extends ChannelInboundHandlerAdapter
{
    private final long timeoutNanos;
    private ScheduledFuture<?> deadline;

    RequestDeadline(final Duration timeout)
    {
        this.timeoutNanos = timeout.toNanos();
    }

    @Override
    public void channelRead(final ChannelHandlerContext ctx, final Object msg)
    {
        if (deadline == null)
        {
            deadline = ctx.executor().schedule(() ->
            {
                ctx.close();
            }, timeoutNanos, TimeUnit.NANOSECONDS);
        }
        ctx.fireChannelRead(msg);
    }

    /** The request being read arrived whole: the next one's deadline starts at its first byte. */
    void arrived()
    {
        if (deadline != null)
        {
            deadline.cancel(false);
            deadline = null;
        }
    }

    @Override
    public void channelInactive(final ChannelHandlerContext ctx)
    {
        arrived();
        ctx.fireChannelInactive();
    }
}
