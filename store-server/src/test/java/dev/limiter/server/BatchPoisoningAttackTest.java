package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterRequestException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static dev.limiter.server.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The SDK sends concurrent calls in one frame. An entry the node cannot key (a PRINCIPAL- or
 * CLIENT_IP-scoped policy and no principal or client IP) was answered with one ERROR for the whole
 * frame, which the SDK gave to every call in it: one caller that left its principal out failed the
 * calls of everyone batched with it (1,773 of 2,000, found by a hostile review). Now that entry alone
 * is refused (INVALID_REQUEST, with why) and the others are decided.
 */
@Timeout(60)
class BatchPoisoningAttackTest
{
    @TempDir
    Path dir;

    private final ManualClock clock = new ManualClock(1_000 * SECOND);
    private StoreServer server;
    private LimiterClient client;

    @BeforeEach
    void start() throws Exception
    {
        server = new StoreServer(TestNode.config(dir, 0, 1), clock).start(); // TestNode's policies: per-user is PRINCIPAL-scoped on /u
        client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop()
    {
        client.close();
        server.close();
    }

    @Test
    void oneCallWithoutThePrincipalItsPolicyNeedsFailsNoOtherCall()
    {
        final List<CompletableFuture<Decision>> others = new ArrayList<>();
        final List<CompletableFuture<Decision>> poison = new ArrayList<>();
        for (int i = 0; i < 2_000; i++)
        {
            others.add(client.acquire(Descriptor.of("tenant-" + i, "/v1/orders/" + i), 1));
            if (i % 100 == 0)
            {
                poison.add(client.acquire(Descriptor.of("mallory", "/u"), 1)); // per-user needs a principal; none given
            }
        }
        int failed = 0;
        String example = null;
        for (final CompletableFuture<Decision> call : others)
        {
            try
            {
                call.join();
            }
            catch (final CompletionException e)
            {
                failed++;
                if (e.getCause() instanceof LimiterRequestException)
                {
                    example = e.getCause().getMessage();
                }
            }
        }
        int poisonFailed = 0;
        for (final CompletableFuture<Decision> call : poison)
        {
            poisonFailed += call.isCompletedExceptionally() || call.handle((d, e) -> e != null).join() ? 1 : 0;
        }
        assertEquals(0, failed, "other callers' calls failed: " + example);
        assertEquals(poison.size(), poisonFailed, "each call without its principal is refused");
        final CompletionException refused = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class, () -> poison.get(0).join());
        assertEquals("INVALID_DESCRIPTOR: principal is required by policy 'per-user', which limits each principal within a tenant",
            refused.getCause().getMessage());
    }
}
