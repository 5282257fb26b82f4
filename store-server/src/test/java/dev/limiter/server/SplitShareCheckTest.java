package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
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

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A check (cost 0, Envoy's {@code hits_addend: 0}) of a GLOBAL policy split across shards: the
 * router sends an acquire to a share that has the tokens, but a check "fits" any share (0 tokens
 * asked), so it is answered by whichever share comes first, empty or not.
 */
@Timeout(60)
class SplitShareCheckTest
{
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"pool\",\"selector\":{\"route\":\"/pool\"},\"rate\":1,\"period\":\"3600s\",\"burst\":8,\"scope\":\"GLOBAL\"," +
        "\"splitAcrossShards\":true,\"owner\":\"t\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1000,\"owner\":\"t\"}}";

    @TempDir
    Path dir;

    @Test
    void aCheckAgreesWithTheAcquireThatFollowsIt() throws Exception
    {
        final Path policies = dir.resolve("split-policies.json");
        Files.writeString(policies, POLICIES);
        final ManualClock clock = new ManualClock(1_000 * SECOND);
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 2).policiesFile(policies), clock).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final Descriptor pool = Descriptor.of("anyone", "/pool");
            final List<String> disagreements = new ArrayList<>();
            for (int i = 0; i < 9; i++)
            {
                final Decision check = client.check(pool).join();
                final Decision acquire = client.acquireBlocking(pool, 1);
                if (check.allowed() != acquire.allowed())
                {
                    disagreements.add("#" + i + ": check " + (check.allowed() ? "allowed" : "refused") + " (remaining " + check.remaining() +
                        "), the acquire after it " + (acquire.allowed() ? "allowed" : "refused"));
                }
            }
            System.out.println("split pool of 8 over 2 shards, check then acquire, 9 times: " + disagreements);
            assertEquals(List.of(), disagreements);
        }
    }
}
