package dev.limiter.server.testing;

import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import dev.limiter.server.engine.MonotonicClock;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Starts real nodes on 127.0.0.1 with ephemeral ports and a policy file in a temp directory. */
public final class TestNode
{
    public static final long SECOND = 1_000_000_000L;

    /** orders: 10/s burst 5 per tenant; hot: 100/s burst 50 shared by all; anything else: 2/s burst 2. */
    public static final String POLICIES = "{\"version\":3,\"policies\":[" +
        "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"}" +
        ",\"rate\":10,\"period\":\"1s\",\"burst\":5,\"owner\":\"test\"}," +
        "{\"id\":\"hot\",\"selector\":{\"route\":\"/hot\"}" +
        ",\"rate\":100,\"period\":\"1s\",\"burst\":50,\"scope\":\"GLOBAL\",\"owner\":\"test\"}," +
        "{\"id\":\"per-user\",\"selector\":{\"route\":\"/u\"}" +
        ",\"rate\":1,\"period\":\"1s\",\"burst\":1,\"scope\":\"PRINCIPAL\",\"owner\":\"test\"}," +
        "{\"id\":\"per-ip\",\"selector\":{\"route\":\"/ip\"}" +
        ",\"rate\":1,\"period\":\"1s\",\"burst\":1,\"scope\":\"CLIENT_IP\",\"owner\":\"test\"}," +
        "{\"id\":\"fast\",\"selector\":{\"route\":\"/fast\"}" +
        ",\"rate\":20,\"period\":\"1s\",\"burst\":20,\"scope\":\"GLOBAL\",\"owner\":\"test\"}," +
        "{\"id\":\"strict\",\"selector\":{\"route\":\"/strict\"}" +
        ",\"rate\":20,\"period\":\"1s\",\"burst\":20,\"scope\":\"GLOBAL\",\"consistency\":\"STRICT\"" +
        ",\"owner\":\"test\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"burst\":2,\"owner\":\"test\"}}";

    private TestNode()
    {
    }

    public static ServerConfig config(final Path dir, final int port, final int shards)
    {
        try
        {
            final Path policies = dir.resolve("policies.json");
            Files.writeString(policies, POLICIES);
            return new ServerConfig().host("127.0.0.1").port(port).adminPort(0).shards(shards).ioThreads(2)
                .policiesFile(policies).dataDir(dir).maxBucketsPerShard(10_000).keyArenaBytesPerShard(10_000 * 64);
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException(e);
        }
    }

    /** A node of {@code config} on a {@link ManualClock} at one second that nothing moves. */
    public static StoreServer start(final ServerConfig config) throws InterruptedException
    {
        return new StoreServer(config, new ManualClock(SECOND)).start();
    }

    public static StoreServer start(final Path dir, final MonotonicClock clock,
        final int shards) throws InterruptedException
    {
        return start(dir, clock, shards, 0);
    }

    public static StoreServer start(final Path dir, final MonotonicClock clock, final int shards,
        final int port) throws InterruptedException
    {
        return new StoreServer(config(dir, port, shards), clock).start();
    }

    /** A node whose shards run on dedicated threads rather than on the event loops. */
    public static StoreServer startWithShardThreads(final Path dir, final MonotonicClock clock,
        final int shards) throws InterruptedException
    {
        return new StoreServer(config(dir, 0, shards).shardThreads(true), clock).start();
    }
}
