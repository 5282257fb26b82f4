package dev.limiter.client;

import io.netty.channel.epoll.Epoll;

/** Picks Netty's transport without making the native epoll library a hard dependency. */
final class Transport
{
    private Transport()
    {
    }

    static boolean epollAvailable()
    {
        try
        {
            return Epoll.isAvailable();
        }
        catch (final Throwable e)
        {
            return false; // classes or native library missing: NIO it is
        }
    }
}
