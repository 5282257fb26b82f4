package dev.limiter.server;

import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;

/**
 * The data and admin ports' transport: io_uring where preferred and the kernel allows it, else epoll
 * where preferred and available, else NIO.
 *
 * @param name        io_uring, epoll or nio
 * @param ioFactory   the event loops' I/O
 * @param channelType the listening channels' class
 * @param note        why a preferred transport was not taken (" (io_uring unavailable: ...)"), or ""
 */
record Transport(String name, IoHandlerFactory ioFactory, Class<? extends ServerChannel> channelType, String note)
{
    /** The transport the data port's settings prefer, of those this machine offers. */
    static Transport of(final DataPortConfig config)
    {
        final String note = config.preferIoUring() && !IoUring.isAvailable() ?
            " (io_uring unavailable: " + IoUring.unavailabilityCause() + ")" : "";
        if (config.preferIoUring() && IoUring.isAvailable())
        {
            return new Transport("io_uring", IoUringIoHandler.newFactory(), IoUringServerSocketChannel.class, note);
        }
        if (config.preferEpoll() && Epoll.isAvailable())
        {
            return new Transport("epoll", EpollIoHandler.newFactory(), EpollServerSocketChannel.class, note);
        }
        return new Transport("nio", NioIoHandler.newFactory(), NioServerSocketChannel.class, note);
    }
}
