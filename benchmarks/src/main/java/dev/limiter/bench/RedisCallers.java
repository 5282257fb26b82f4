package dev.limiter.bench;

import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The design this store replaces, as a service's request threads use it: one Jedis connection per
 * thread, each decision an EVALSHA of the classic Lua token bucket ({@code redis/token_bucket.lua}
 * in the tools jar: Redis' own clock, HMGET/HSET, PEXPIRE), one key per tenant. For
 * {@code ./limiter bench --blocking-threads N --redis HOST:PORT}.
 */
final class RedisCallers
{
    private static final String SCRIPT = script();

    private final String host;
    private final int port;
    private final String rate;
    private final String cost;

    /**
     * @param hostPort   the Redis to call
     * @param ratePerSec the bucket's rate per second and its burst
     * @param cost       tokens per decision
     */
    RedisCallers(final String hostPort, final long ratePerSec, final int cost)
    {
        final int colon = hostPort.lastIndexOf(':');
        if (colon <= 0 || colon == hostPort.length() - 1)
        {
            throw new IllegalArgumentException("--redis wants HOST:PORT, was '" + hostPort + "'");
        }
        this.host = hostPort.substring(0, colon);
        this.port = Integer.parseInt(hostPort.substring(colon + 1));
        this.rate = Long.toString(ratePerSec);
        this.cost = Integer.toString(cost);
    }

    /** A caller for one thread: its own connection, the script loaded once. */
    LoadGenerator.BlockingCaller caller(final int thread)
    {
        final Jedis jedis = new Jedis(host, port);
        final String sha = jedis.scriptLoad(SCRIPT);
        return new LoadGenerator.BlockingCaller()
        {
            @Override
            public int call(final int key)
            {
                final Object allowed = jedis.evalsha(sha, 1, "tb:tenant-" + key, rate, rate, cost);
                return Long.valueOf(1).equals(allowed) ? ALLOWED : DENIED;
            }

            @Override
            public void close()
            {
                jedis.close();
            }
        };
    }

    private static String script()
    {
        try (InputStream in = RedisCallers.class.getResourceAsStream("/redis/token_bucket.lua"))
        {
            if (in == null)
            {
                throw new IllegalStateException("redis/token_bucket.lua is missing from the tools jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException(e);
        }
    }
}
