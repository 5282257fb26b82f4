package dev.limiter.server.net;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;

import java.net.InetSocketAddress;

/** Binds a node's listening ports, failing with a message that names the port and the option that sets it. */
public final class Listener
{
    private Listener()
    {
    }

    /** Thrown when a port cannot be listened on (in use, or an address this machine does not have). */
    public static final class ListenFailure extends RuntimeException
    {
        ListenFailure(final String message, final Throwable cause)
        {
            super(message, cause);
        }
    }

    /**
     * Binds {@code bootstrap} to {@code host:port}; {@code what} names the port ("data port") and
     * {@code option} the command-line option that chooses it.
     */
    public static Channel bind(final ServerBootstrap bootstrap, final String host, final int port, final String what, final String option)
        throws InterruptedException
    {
        try
        {
            return bootstrap.bind(new InetSocketAddress(host, port)).sync().channel();
        }
        catch (final InterruptedException e)
        {
            throw e;
        }
        catch (final Exception e) // Netty's bind().sync() throws its IOExceptions undeclared (a BindException, or epoll's own)
        {
            final String message = String.valueOf(e.getMessage());
            throw new ListenFailure("cannot listen on the " + what + " " + host + ":" + port + " (" + message + "): " +
                whatToDo(message, option), e);
        }
    }

    private static String whatToDo(final String bindError, final String option)
    {
        if (bindError.contains("in use"))
        {
            return "the port is in use: is another node running? stop it, or choose another with " + option;
        }
        if (bindError.contains("assign requested address"))
        {
            return "this machine has no such address: choose one of its own with --host";
        }
        return "choose another address with --host, or another port with " + option;
    }
}
