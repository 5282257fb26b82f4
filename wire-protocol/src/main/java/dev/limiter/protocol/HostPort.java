package dev.limiter.protocol;

import java.net.InetSocketAddress;

/**
 * A node's address as people write it: {@code host:port}, {@code [v6]:port}. One parser for the
 * SDK, the tools and the nodes, with errors that say what was wrong and show the expected form.
 * (The raft module parses its peers itself: it shares nothing with the client protocol.)
 */
public final class HostPort
{
    private HostPort()
    {
    }

    /**
     * Parses {@code host:port} into an unresolved address.
     *
     * @param what what the text is, for the error ("endpoint", "server", ...)
     * @throws IllegalArgumentException naming the text when it is not host:port or the port is not 1-65535
     */
    public static InetSocketAddress parse(final String text, final String what)
    {
        final String hostPort = text == null ? "" : text.strip();
        final int colon = hostPort.lastIndexOf(':');
        if (colon <= 0 || colon == hostPort.length() - 1)
        {
            throw new IllegalArgumentException(what + " '" + hostPort + "' is not host:port (e.g. 127.0.0.1:7400)");
        }
        final String host = hostPort.substring(0, colon).replace("[", "").replace("]", "");
        final int port;
        try
        {
            port = Integer.parseInt(hostPort.substring(colon + 1));
        }
        catch (final NumberFormatException e)
        {
            throw new IllegalArgumentException(what + " '" + hostPort + "' has a port that is not a number");
        }
        if (port < 1 || port > 65535)
        {
            throw new IllegalArgumentException(what + " '" + hostPort + "' has port " + port + " outside 1-65535");
        }
        return InetSocketAddress.createUnresolved(host, port);
    }

    /** {@code host:port} with the port moved by {@code offset} (a node's Raft port from its data port, or back). */
    public static String shifted(final String hostPort, final int offset)
    {
        final InetSocketAddress address = parse(hostPort, "address");
        return address.getHostString() + ":" + (address.getPort() + offset);
    }
}
