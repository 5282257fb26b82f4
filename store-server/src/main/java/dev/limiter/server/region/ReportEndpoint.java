package dev.limiter.server.region;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.RegionReport;
import dev.limiter.server.admin.AdminToken;
import dev.limiter.server.admin.NodeStatus;

import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * {@code GET /region/v1/report}, as this node answers the other regions (and its own region's other
 * nodes): to a caller holding the exchange token, its region's name, whether it leads the region's
 * control group, when the report was made (its wall clock), and for each regional policy in force
 * the share it reports ({@link NodeShares#reportedShare}) and the demand its own shards saw.
 */
final class ReportEndpoint
{
    private final RegionConfig config;
    private final BooleanSupplier leads;
    private final NodeShares shares;
    private final DemandMeter demand;
    /** This node's wall clock, in milliseconds. */
    private final LongSupplier clock;

    ReportEndpoint(final RegionConfig config, final BooleanSupplier leads, final NodeShares shares,
        final DemandMeter demand, final LongSupplier clock)
    {
        this.config = config;
        this.leads = leads;
        this.shares = shares;
        this.demand = demand;
        this.clock = clock;
    }

    /** The answer to a caller that sent {@code authorization} (the header's value, or null). */
    NodeStatus.Answer answer(final String authorization)
    {
        if (config.token() == null || !AdminToken.accepts(config.token(), authorization))
        {
            return new NodeStatus.Answer(401, "{\"error\":\"the region exchange needs " +
                "'Authorization: Bearer <region token>' (--region-token or $LIMITER_REGION_TOKEN, " +
                "the same in every region)\"}\n");
        }
        final RegionReport.Builder report = RegionReport.newBuilder().setRegion(config.region())
            .setLeader(leads.getAsBoolean()).setAt(Timestamps.fromMillis(clock.getAsLong()));
        for (final CompiledPolicy policy : shares.regionalPolicies())
        {
            report.putSharePpm(policy.id(), shares.reportedShare(policy));
            report.putDemandPerSecond(policy.id(), demand.of(policy.id()));
        }
        try
        {
            return new NodeStatus.Answer(200, ReportBody.json(report));
        }
        catch (final InvalidProtocolBufferException e)
        {
            return new NodeStatus.Answer(500, "{\"error\":\"" + e.getMessage() + "\"}\n");
        }
    }
}
