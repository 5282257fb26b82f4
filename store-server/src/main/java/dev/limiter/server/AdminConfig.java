package dev.limiter.server;

/**
 * The admin HTTP port ({@code /metrics}, {@code /health}, {@code /status} and the {@code /v1} API):
 * where it listens, its token and the limits of its connections. It binds the data port's host, and
 * a request must be finished within the data port's frame timeout.
 *
 * @param port              admin port; 0 picks any free port, -1 turns the port off
 * @param token             bearer token of the {@code /v1} API; null: {@code $LIMITER_ADMIN_TOKEN}, else one
 *                          generated into the data directory
 * @param maxConnections    connections served at once; more are answered 503
 * @param idleTimeoutMillis a connection that sends nothing for this long is closed, ms
 */
public record AdminConfig(int port, String token, int maxConnections, long idleTimeoutMillis)
{
    /** The admin port's defaults, with their units in their names. */
    public static final class Defaults
    {
        public static final int PORT = 7480;
        public static final int MAX_CONNECTIONS = 64;
        public static final long IDLE_TIMEOUT_MILLIS = 60_000;

        private Defaults()
        {
        }
    }

    public AdminConfig
    {
        Settings.require(port >= -1 && port <= 65535,
            "admin port must be -1 (off), 0 (any free port) or up to 65535, was " + port);
        Settings.require(maxConnections >= 1 && maxConnections <= 10_000,
            "admin max connections must be 1 to 10000, was " + maxConnections);
        Settings.require(idleTimeoutMillis >= 100 && idleTimeoutMillis <= 86_400_000L,
            "admin idle timeout must be 100 ms to 1 day, was " + idleTimeoutMillis + " ms");
    }

    /** Whether the admin port is served (a port of -1 turns it off). */
    public boolean enabled()
    {
        return port >= 0;
    }

    /** The token stays out of logs and messages. */
    @Override
    public String toString()
    {
        return "AdminConfig[port=" + port + ", token=" + (token == null ? "unset" : "set") + ", maxConnections=" +
            maxConnections + ", idleTimeoutMillis=" + idleTimeoutMillis + "]";
    }
}
