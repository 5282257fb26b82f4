package dev.limiter.server.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Loopback ports for test clusters: each member's data port and its Raft port (data + offset) free,
 * all below the kernel's ephemeral range, so that no outgoing connection or port-0 listener of the
 * test (a member's own admin port, say) takes one between the choice and the bind.
 */
public final class ClusterPorts
{
    private ClusterPorts()
    {
    }

    /** {@code count} consecutive data ports whose Raft ports ({@code + raftOffset}) are free too. */
    public static int[] free(final int count, final int raftOffset)
    {
        while (true)
        {
            final int base = randomBase(count + raftOffset);
            boolean free = true;
            for (int i = 0; i < count && free; i++)
            {
                free = bindable(base + i) && bindable(base + i + raftOffset);
            }
            if (free)
            {
                final int[] ports = new int[count];
                for (int i = 0; i < count; i++)
                {
                    ports[i] = base + i;
                }
                return ports;
            }
        }
    }

    /** A random first port such that {@code span} ports from it stay between 10,000 and the ephemeral range. */
    public static int randomBase(final int span)
    {
        final int below = ephemeralLow() - span - 1;
        return 10_000 + ThreadLocalRandom.current().nextInt(Math.max(1, below - 10_000));
    }

    /** The first port the kernel hands out for port 0 and outgoing connections (32768 when it does not say). */
    private static int ephemeralLow()
    {
        try
        {
            final String range = java.nio.file.Files.readString(
                java.nio.file.Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim();
            return Math.max(12_000, Integer.parseInt(range.split("\\s+")[0]));
        }
        catch (final IOException | RuntimeException e)
        {
            return 32_768;
        }
    }

    public static boolean bindable(final int port)
    {
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress()))
        {
            return true;
        }
        catch (final IOException e)
        {
            return false;
        }
    }
}
