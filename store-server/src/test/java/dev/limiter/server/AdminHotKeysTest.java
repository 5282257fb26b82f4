package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static dev.limiter.server.testing.AdminCalls.TOKEN;
import static dev.limiter.server.testing.AdminCalls.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The hot-keys resource of the admin API and the node's gauge: the busiest keys of each shard, sampled. */
@Timeout(60)
class AdminHotKeysTest
{
    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void theBusiestTenantIsNamedByHotKeysAndTheNodesGaugeShowsItsShare() throws Exception
    {
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).adminToken(TOKEN)).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(2)).build())
        {
            dev.limiter.protocol.policy.HotKeyReport report = dev.limiter.protocol.policy.HotKeyReport.getDefaultInstance();
            final long until = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < until)
            {
                // Two thirds of the traffic from one tenant, the rest spread over 500; reports come about every second.
                final List<java.util.concurrent.CompletableFuture<Decision>> calls = new java.util.ArrayList<>();
                for (int i = 0; i < 3000; i++)
                {
                    calls.add(client.acquire(Descriptor.of(i % 3 == 0 ? "tenant-" + (i % 500) : "big-customer", "/v1/orders/1"), 1));
                }
                for (final java.util.concurrent.CompletableFuture<Decision> call : calls)
                {
                    call.get();
                }
                final HttpResponse<String> answer = call(server, "GET", "/v1/hot-keys", null);
                assertEquals(200, answer.statusCode(), answer.body());
                final dev.limiter.protocol.policy.HotKeyReport.Builder parsed = dev.limiter.protocol.policy.HotKeyReport.newBuilder();
                com.google.protobuf.util.JsonFormat.parser().merge(answer.body(), parsed);
                report = parsed.build();
                if (report.getShards(0).getTopCount() > 0)
                {
                    break;
                }
                // a round of traffic, then a pause: reports come about once a second
                Thread.sleep(200);
            }
            assertEquals(16, report.getSampleEvery());
            final dev.limiter.protocol.policy.HotKey top = report.getShards(0).getTop(0);
            assertEquals("big-customer", top.getKey(), report.toString());
            assertEquals("orders", top.getPolicyId());
            assertEquals(1, top.getPolicyVersion());
            assertEquals(dev.limiter.protocol.policy.Scope.TENANT, top.getScope());
            assertTrue(top.getShare() > 0.5 && top.getShare() < 0.85, "about two thirds: " + top.getShare());
            final String gauge = server.metrics().scrape().lines().filter(l -> l.startsWith("limiter_hot_key_share{shard=\"0\"}"))
                .findFirst().orElseThrow();
            assertTrue(Double.parseDouble(gauge.substring(gauge.lastIndexOf(' ') + 1)) > 0.5, gauge);
            assertEquals(401, call(http, server.adminPort(), "GET", "/v1/hot-keys", null, null).statusCode(), "tenant names need the token");
        }
    }

    @Test
    void aStackedRouteBudgetShowsAsTheHotKeyItIs() throws Exception
    {
        try (StoreServer server = new StoreServer(TestNode.config(dir, 0, 1).adminToken(TOKEN)).start();
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(2)).build())
        {
            assertEquals(200, call(server, "PUT", "/v1/policies/orders-global", "{\"selector\":{\"route\":\"/v1/orders/{id}\"}," +
                "\"rate\":100000,\"burst\":100000,\"scope\":\"GLOBAL\",\"stacked\":true,\"owner\":\"o\",\"reason\":\"r\"}").statusCode());
            dev.limiter.protocol.policy.HotKeyReport report = dev.limiter.protocol.policy.HotKeyReport.getDefaultInstance();
            final long until = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < until)
            {
                // Every request touches its tenant's bucket and the route's one: half the touches are the route's.
                final List<java.util.concurrent.CompletableFuture<Decision>> calls = new java.util.ArrayList<>();
                for (int i = 0; i < 3000; i++)
                {
                    calls.add(client.acquire(Descriptor.of("tenant-" + (i % 300), "/v1/orders/1"), 1));
                }
                for (final java.util.concurrent.CompletableFuture<Decision> call : calls)
                {
                    call.get();
                }
                report = server.hotKeys();
                if (report.getShards(0).getTopCount() > 0)
                {
                    break;
                }
                // a round of traffic, then a pause: reports come about once a second
                Thread.sleep(200);
            }
            final dev.limiter.protocol.policy.HotKey top = report.getShards(0).getTop(0);
            assertEquals("orders-global", top.getPolicyId(), report.toString());
            assertEquals(dev.limiter.protocol.policy.Scope.GLOBAL, top.getScope());
            assertEquals("", top.getKey());
            assertTrue(top.getShare() > 0.35 && top.getShare() < 0.65, "about half of the touches: " + top.getShare());
        }
    }
}
