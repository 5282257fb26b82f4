package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A hot GLOBAL key split across a node's shards ({@code splitAcrossShards}): every shard decides
 * from its share, the shares together grant exactly what the one bucket would, and requests go to
 * shares that still have tokens, so the split refuses little that the one bucket would grant.
 */
@Timeout(60)
class SplitGlobalTest
{
    private static final int SHARDS = 4;

    @TempDir
    Path dir;

    private StoreServer start(final ManualClock clock, final String policy) throws Exception
    {
        final Path policies = dir.resolve("split-policies.json");
        Files.writeString(policies, "{\"version\":1,\"policies\":[" + policy +
            "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"t\"}}");
        return new StoreServer(TestNode.config(dir, 0, SHARDS).policiesFile(policies), clock).start();
    }

    private static LimiterClient client(final StoreServer server)
    {
        return LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build();
    }

    @Test
    void theSharesOfASplitKeyGrantExactlyTheBudgetOfTheOneBucketAndEveryShardDecides() throws Exception
    {
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        // One token an hour: the clock stands still, so the burst is all there is.
        try (StoreServer server = start(clock, "{\"id\":\"everyone\",\"selector\":{\"route\":\"/all\"},\"rate\":1,\"period\":\"3600s\"," +
            "\"burst\":1001,\"scope\":\"GLOBAL\",\"splitAcrossShards\":true,\"owner\":\"t\"}");
             LimiterClient client = client(server))
        {
            final Descriptor all = Descriptor.of("any", "/all");
            long allowed = 0;
            for (int round = 0; round < 15; round++)
            {
                allowed += countAllowed(client, all, 100); // pipelined: frames of many entries, spread entry by entry
            }
            assertEquals(1001, allowed, "the four shares hold 1001 tokens between them (251 + 250 x 3), no more, no fewer");
            assertEquals(SHARDS, server.bucketCount(), "one bucket per shard: every share was decided");
            final Decision refused = client.acquireBlocking(all, 1);
            assertFalse(refused.allowed());
            assertEquals(1001, refused.limit(), "an answer names the policy's whole burst, not a share's");
            // An hour adds one token to the whole budget, a quarter to each share: what the split costs is
            // that fraction, less than a token per share, held until it adds up.
            clock.advance(3600 * SECOND);
            assertEquals(0, countAllowed(client, all, 12));
            // Four hours: a whole token on each share, each found however many shares refuse first.
            clock.advance(3 * 3600 * SECOND);
            assertEquals(4, countAllowed(client, all, 40));
        }
    }

    @Test
    void anExtraWindowLimitIsSplitToo() throws Exception
    {
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        // 1,000/s, and 10 an hour in a fixed window: the window's 10 split 3, 3, 2, 2 over the shards.
        try (StoreServer server = start(clock, "{\"id\":\"everyone\",\"selector\":{\"route\":\"/all\"},\"rate\":1000,\"burst\":100," +
            "\"limits\":[{\"rate\":10,\"period\":\"3600s\",\"algorithm\":\"FIXED_WINDOW\"}]," +
            "\"scope\":\"GLOBAL\",\"splitAcrossShards\":true,\"owner\":\"t\"}");
             LimiterClient client = client(server))
        {
            final Descriptor all = Descriptor.of("any", "/all");
            long allowed = 0;
            for (int i = 0; i < 40; i++)
            {
                clock.advance(SECOND / 100);
                allowed += client.acquireBlocking(all, 1).allowed() ? 1 : 0;
            }
            assertEquals(10, allowed, "the hour's window holds 10 between its shares");
        }
    }

    @Test
    void underSteadyOverloadASplitKeyGrantsAlmostAllItsRateAndNeverMore() throws Exception
    {
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        try (StoreServer server = start(clock, "{\"id\":\"everyone\",\"selector\":{\"route\":\"/all\"},\"rate\":1000,\"burst\":100," +
            "\"scope\":\"GLOBAL\",\"splitAcrossShards\":true,\"owner\":\"t\"}");
             LimiterClient client = client(server))
        {
            final Descriptor all = Descriptor.of("any", "/all");
            long allowed = 0;
            final int steps = 400;
            for (int step = 0; step < steps; step++)
            {
                // 10 ms of time (10 tokens) against 16 requests: 1.6x overload, in frames the router spreads.
                clock.advance(10_000_000L);
                allowed += countAllowed(client, all, 16);
            }
            final long budget = 100 + 1000L * steps * 10 / 1000; // burst + rate x T
            assertTrue(allowed <= budget, "never more than burst + rate x T: " + allowed + " of " + budget);
            // Shares drain together, so what is refused while another share has tokens is a few tokens per
            // share at most (a refill fraction per share): at least 98% of the budget is granted.
            assertTrue(allowed >= budget * 98 / 100, "granted " + allowed + " of " + budget);
        }
    }

    @Test
    void requestsGoToSharesThatHaveTokensSoAnUnevenShareDoesNotRefuseWhatTheBudgetHolds() throws Exception
    {
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        try (StoreServer server = start(clock, "{\"id\":\"everyone\",\"selector\":{\"route\":\"/all\"},\"rate\":1,\"period\":\"3600s\"," +
            "\"burst\":1000,\"scope\":\"GLOBAL\",\"splitAcrossShards\":true,\"owner\":\"t\"}");
             LimiterClient client = client(server))
        {
            final Descriptor all = Descriptor.of("any", "/all");
            // Costs 5, 1, 1, 1 in turn: a plain round robin over 4 shares would send every cost-5 request to the
            // same share, which would refuse 50 of them with 550 tokens left elsewhere. 800 tokens asked of 1000.
            int refused = 0;
            long granted = 0;
            for (int i = 0; i < 400; i++)
            {
                final int cost = i % 4 == 0 ? 5 : 1;
                final Decision d = client.acquireBlocking(all, cost);
                assertFalse(d.degraded(), d.toString());
                refused += d.allowed() ? 0 : 1;
                granted += d.allowed() ? cost : 0;
            }
            assertTrue(refused <= 2 * SHARDS, "a share refuses once, then is skipped while it is empty: " + refused + " refused, " +
                granted + " tokens granted");
        }
    }

    @Test
    void aRequestOfASplitPolicyCannotAlsoTakeALeaseOfAStackedPool() throws Exception
    {
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        try (StoreServer server = start(clock, "{\"id\":\"everyone\",\"selector\":{\"route\":\"/all\"},\"rate\":1000," +
            "\"scope\":\"GLOBAL\",\"splitAcrossShards\":true,\"owner\":\"t\"}," +
            "{\"id\":\"pool\",\"selector\":{\"route\":\"/all\"},\"maxConcurrent\":40,\"scope\":\"GLOBAL\",\"stacked\":true," +
            "\"owner\":\"t\"}");
             LimiterClient client = client(server))
        {
            // Its release would go to whichever share the router picks and could free another holder's lease.
            final LimiterRequestException refused = assertThrows(LimiterRequestException.class,
                () -> client.acquireBlocking(Descriptor.of("any", "/all"), 1));
            assertTrue(refused.getMessage().contains("policy 'everyone' is split across shards and stacked policy 'pool' holds leases"),
                refused.getMessage());
            assertEquals(0, server.bucketCount(), "nothing was charged");
        }
    }

    private static long countAllowed(final LimiterClient client, final Descriptor descriptor, final int calls)
    {
        final List<CompletableFuture<Decision>> answers = new ArrayList<>(calls);
        for (int i = 0; i < calls; i++)
        {
            answers.add(client.acquire(descriptor, 1));
        }
        long allowed = 0;
        for (final CompletableFuture<Decision> answer : answers)
        {
            final Decision d = answer.join();
            assertFalse(d.degraded(), "every answer is the node's: " + d);
            allowed += d.allowed() ? 1 : 0;
        }
        return allowed;
    }
}
