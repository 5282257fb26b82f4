package dev.limiter.server;

import dev.limiter.server.admin.RejectionSamples;
import dev.limiter.server.engine.RejectedDecisions;

import java.util.List;

/** The admin API's view of the engine's {@link RejectedDecisions}. */
public final class SampledRejections implements RejectionSamples
{
    private final String node;
    private final RejectedDecisions log;

    public SampledRejections(final String node, final RejectedDecisions log)
    {
        this.node = node;
        this.log = log;
    }

    @Override
    public String node()
    {
        return node;
    }

    @Override
    public long sampled()
    {
        return log.sampled();
    }

    @Override
    public long dropped()
    {
        return log.dropped();
    }

    @Override
    public List<Rejection> newest(final int limit, final String policy, final String tenant)
    {
        return log.newest(limit, policy, tenant).stream().map(SampledRejections::of).toList();
    }

    @Override
    public Rejection find(final String decisionId)
    {
        final RejectedDecisions.Sample sample = log.find(decisionId);
        return sample == null ? null : of(sample);
    }

    private static Rejection of(final RejectedDecisions.Sample s)
    {
        return new Rejection(s.id(), s.atMillis(), s.policy(), s.version(), s.tenant(), s.route(), s.reason());
    }
}
