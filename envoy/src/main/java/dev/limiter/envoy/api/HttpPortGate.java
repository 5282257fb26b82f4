package dev.limiter.envoy.api;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The first handler of every connection to the HTTP port: counts it, and closes it at once when the
 * port already has its cap of connections open (as the node's ports and the gRPC port do). Shared
 * by the port's connections.
 */
@ChannelHandler.Sharable
final class HttpPortGate extends ChannelInboundHandlerAdapter
{
    private final int maxConnections;
    private final AtomicInteger open = new AtomicInteger();
    private final AtomicLong refusedOverCap = new AtomicLong();

    HttpPortGate(final int maxConnections)
    {
        this.maxConnections = maxConnections;
    }

    @Override
    public void handlerAdded(final ChannelHandlerContext ctx)
    {
        if (open.incrementAndGet() > maxConnections)
        {
            open.decrementAndGet();
            refusedOverCap.incrementAndGet();
            ctx.channel().close();
            return;
        }
        ctx.channel().closeFuture().addListener(closed -> open.decrementAndGet());
        ctx.pipeline().remove(this);
    }

    int open()
    {
        return open.get();
    }

    long refusedOverCap()
    {
        return refusedOverCap.get();
    }
}
