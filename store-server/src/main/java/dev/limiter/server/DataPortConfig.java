package dev.limiter.server;

import dev.limiter.protocol.Frame;

/**
 * The data port: the address clients connect to, its event loops and transport, and the limits of
 * its connections. Valid once built: the compact constructor refuses any value out of range, naming
 * the setting and what it accepts.
 *
 * @param host               address the data and admin ports bind
 * @param port               data port; 0 picks any free port
 * @param ioThreads          Netty event loops serving connections
 * @param maxFrameBytes      largest frame accepted; a larger one closes its connection
 * @param maxConnections     connections served at once; more are refused with ERROR OVERLOADED
 * @param idleTimeoutMillis  a connection that sends nothing for this long is closed, ms
 * @param frameTimeoutMillis a frame (or an admin HTTP request) begun and not finished within this closes its
 *                           connection, ms
 * @param preferEpoll        epoll where the native transport loads; false forces NIO
 * @param preferIoUring      io_uring where the kernel allows it (one submission per event-loop turn)
 */
public record DataPortConfig(
    String host,
    int port,
    int ioThreads,
    int maxFrameBytes,
    int maxConnections,
    long idleTimeoutMillis,
    long frameTimeoutMillis,
    boolean preferEpoll,
    boolean preferIoUring)
{
    /** The data port's defaults, with their units in their names. */
    public static final class Defaults
    {
        public static final String HOST = "127.0.0.1";
        public static final int PORT = 7400;
        /**
         * Event loops (and shards): one per two cores, at least 1. Each shard is owned by one event
         * loop, so a frame whose keys live on its connection's loop is decided with no hand-off; the
         * other half of the cores is left to the clients and the OS.
         */
        public static final int IO_THREADS = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
        public static final int MAX_FRAME_BYTES = Frame.DEFAULT_MAX_FRAME_BYTES;
        public static final int MAX_CONNECTIONS = 10_000;
        /** SDKs ping well within it. */
        public static final long IDLE_TIMEOUT_MILLIS = 120_000;
        public static final long FRAME_TIMEOUT_MILLIS = 10_000;

        private Defaults()
        {
        }
    }

    private static final long DAY_MILLIS = 86_400_000L;

    public DataPortConfig
    {
        Settings.require(host != null && !host.isBlank(), "host must not be empty");
        Settings.require(port >= 0 && port <= 65535, "port must be 0 (any free port) to 65535, was " + port);
        Settings.require(ioThreads >= 1 && ioThreads <= 256, "io threads must be 1 to 256, was " + ioThreads);
        Settings.require(!(preferIoUring && !preferEpoll),
            "--io-uring and --nio ask for two different transports: keep one of them");
        Settings.require(maxFrameBytes >= 1024 && maxFrameBytes <= 64 << 20,
            "max frame bytes must be 1024 to 64 MiB, was " + maxFrameBytes);
        Settings.require(maxConnections >= 1 && maxConnections <= 1_000_000,
            "max connections must be 1 to 1000000, was " + maxConnections);
        Settings.require(idleTimeoutMillis >= 100 && idleTimeoutMillis <= DAY_MILLIS,
            "idle timeout must be 100 ms to 1 day, was " + idleTimeoutMillis + " ms");
        Settings.require(frameTimeoutMillis >= 100 && frameTimeoutMillis <= 600_000,
            "frame timeout must be 100 ms to 10 minutes, was " + frameTimeoutMillis + " ms");
    }
}
