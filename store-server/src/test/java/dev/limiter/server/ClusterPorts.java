package dev.limiter.server;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.ThreadLocalRandom;

/** Loopback ports for test clusters: each member's data port and its Raft port (data + offset) free. */
final class ClusterPorts
{
    private ClusterPorts()
    {
    }

    /** {@code count} consecutive data ports whose Raft ports ({@code + raftOffset}) are free too. */
    static int[] free(final int count, final int raftOffset)
    {
        while (true)
        {
            final int base = 20_000 + ThreadLocalRandom.current().nextInt(30_000);
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

    static boolean bindable(final int port)
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
