package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

import static dev.limiter.server.testing.AdminCalls.TOKEN;
import static dev.limiter.server.testing.AdminCalls.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The exemptions resource of the admin API: a tenant let past its limits until an expiry, by the token holder only. */
@Timeout(60)
class AdminExemptionsTest
{
    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void anExemptTenantBypassesItsLimitUntilTheExpiryAndNotAMomentLonger() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final long expiresAt = System.currentTimeMillis() + 1500;
            final String body = "{\"tenant\":\"vip\",\"route\":\"/v1/orders/{id}\",\"owner\":\"sales\",\"reason\":\"launch demo\"," +
                "\"expiresAt\":\"" + java.time.Instant.ofEpochMilli(expiresAt) + "\"}";
            final HttpResponse<String> put = call(server, "PUT", "/v1/exemptions/vip-demo", body);
            assertEquals(200, put.statusCode(), put.body());

            for (int i = 0; i < 20; i++)
            {
                final Decision exempt = client.acquireBlocking(Descriptor.of("vip", "/v1/orders/1"), 1);
                if (System.currentTimeMillis() >= expiresAt - 100)
                {
                    break; // too close to the expiry to say which side of it the node decided on
                }
                assertTrue(exempt.allowed(), exempt.toString());
                assertEquals(ReasonCode.EXEMPT, exempt.reason());
            }
            final Decision other = client.acquireBlocking(Descriptor.of("acme", "/v1/orders/1"), 5);
            assertEquals(ReasonCode.ALLOWED, other.reason(), "other tenants are not covered");
            assertTrue(call(server, "GET", "/v1/exemptions", null).body().contains("\"id\": \"vip-demo\""));

            Await.until("the exemption's expiry", Duration.ofSeconds(3), () -> System.currentTimeMillis() >= expiresAt);
            final Decision after = client.acquireBlocking(Descriptor.of("vip", "/v1/orders/1"), 5);
            assertEquals(ReasonCode.ALLOWED, after.reason(), "charged from the expiry on: " + after);
            assertFalse(client.acquireBlocking(Descriptor.of("vip", "/v1/orders/1"), 1).allowed(), "the burst of 5 is spent");

            Await.until("the tick to remove the expired exemption", Duration.ofSeconds(3),
                () -> server.policyState().exemptions().isEmpty());
            assertTrue(server.policyState().exemptions().isEmpty(), "the tick removed it");
            final String audit = call(server, "GET", "/v1/audit?policy=exemption:vip-demo", null).body();
            assertTrue(audit.contains("EXEMPTION_CREATED") && audit.contains("EXEMPTION_EXPIRED"), audit);
            assertTrue(audit.contains("decisions bypassed in all"), audit);
        }
    }

    @Test
    void anUnauthenticatedExemptionIsRefusedAndBypassesNothing() throws Exception
    {
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).adminToken(TOKEN));
             LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + server.port()).deadline(Duration.ofSeconds(5)).build())
        {
            final String body = "{\"tenant\":\"vip\",\"owner\":\"x\",\"reason\":\"y\",\"expiresAt\":\"" +
                java.time.Instant.now().plusSeconds(600) + "\"}";
            assertEquals(401, call(http, server.adminPort(), "PUT", "/v1/exemptions/sneaky", body, null).statusCode());
            assertEquals(401, call(http, server.adminPort(), "PUT", "/v1/exemptions/sneaky", body, "not-the-token-0123456789").statusCode());
            assertTrue(server.policyState().exemptions().isEmpty());
            assertEquals(ReasonCode.ALLOWED, client.acquireBlocking(Descriptor.of("vip", "/v1/orders/1"), 1).reason());
            final HttpResponse<String> invalid = call(server, "PUT", "/v1/exemptions/no-expiry", "{\"tenant\":\"vip\",\"owner\":\"x\",\"reason\":\"y\"}");
            assertEquals(400, invalid.statusCode());
            assertTrue(invalid.body().contains("exemption.expiresAt"), invalid.body());
            assertEquals(404, call(server, "DELETE", "/v1/exemptions/none?reason=x", null).statusCode());
        }
    }
}
