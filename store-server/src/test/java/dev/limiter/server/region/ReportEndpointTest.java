package dev.limiter.server.region;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.RegionReport;
import dev.limiter.server.admin.NodeStatus;
import dev.limiter.server.control.PolicyState;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ReportEndpointTest
{
    private static final String TOKEN = "region-token-0123456789";
    private static final long NOW = 1_700_000_000_123L;

    private final RegionConfig config = RegionConfig.parse("eu", "us=127.0.0.1:1", TOKEN, 100, 20);
    private final PolicyState state = RegionalOrders.bootstrapped(1);
    private final NodeShares shares =
        new NodeShares(state, RegionGroups.SINGLE, new ShareAllocator("eu", config.regions(), 100, 20), true);
    private final AtomicBoolean leads = new AtomicBoolean(true);
    private final ReportEndpoint endpoint =
        new ReportEndpoint(config, leads::get, shares, new DemandMeter(ordinal -> 0, () -> 0), () -> NOW);

    @Test
    void aCallerWithoutTheExchangeTokenIsRefusedAndToldWhichTokenItNeeds()
    {
        for (final String authorization : new String[] {null, "Bearer wrong-token-0123456789", TOKEN})
        {
            final NodeStatus.Answer refused = endpoint.answer(authorization);
            assertEquals(401, refused.status());
            assertTrue(refused.body().contains("--region-token"), refused.body());
            assertFalse(refused.body().contains(TOKEN), "the token is never echoed");
        }
    }

    @Test
    void theReportSaysTheRegionItsLeadershipItsTimeAndTheSharesItReports() throws Exception
    {
        shares.propose(Map.of("orders", 700_000)); // a raise counts in the report from its proposal
        leads.set(false);
        final NodeStatus.Answer answer = endpoint.answer("Bearer " + TOKEN);

        assertEquals(200, answer.status());
        assertTrue(answer.body().endsWith("}\n") && answer.body().indexOf('\n') == answer.body().length() - 1,
            "one line of JSON: " + answer.body());
        final RegionReport report = ReportBody.parse(answer.body());
        assertEquals("eu", report.getRegion());
        assertFalse(report.getLeader());
        assertEquals(NOW, Timestamps.toMillis(report.getAt()));
        assertEquals(Map.of("orders", 700_000), report.getSharePpmMap(), "regional policies only");
        assertEquals(Map.of("orders", 0.0), report.getDemandPerSecondMap());
    }
}
