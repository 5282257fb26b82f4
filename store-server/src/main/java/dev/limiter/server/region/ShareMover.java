package dev.limiter.server.region;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.RegionReport;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;

/**
 * The control group's leader moves its region's shares: for each regional policy with no proposal
 * of its own still out, it asks {@link ShareAllocator} for the next share from this region's demand
 * and the other regions' reports, and proposes every change as one REGION_SHARES command in its
 * region's log (so a new leader, or the region after a restart, goes on from the last committed
 * shares). A proposal counts in {@link NodeShares} at once and is withdrawn if the log refuses it.
 * A node that does not lead proposes nothing and drops what it had proposed.
 */
final class ShareMover
{
    private final RegionConfig config;
    private final ShareAllocator allocator;
    private final NodeShares shares;
    private final HeardReports heard;
    private final DemandMeter demand;
    private final PolicyControl control;
    /** Whether this node leads its region's control group now. */
    private final BooleanSupplier leads;

    ShareMover(final RegionConfig config, final ShareAllocator allocator, final NodeShares shares,
        final HeardReports heard, final DemandMeter demand, final PolicyControl control, final BooleanSupplier leads)
    {
        this.config = config;
        this.allocator = allocator;
        this.shares = shares;
        this.heard = heard;
        this.demand = demand;
        this.control = control;
        this.leads = leads;
    }

    /** One step at wall time {@code nowMillis}: settles what the log committed, then proposes what should move. */
    void move(final List<CompiledPolicy> regional, final long nowMillis)
    {
        // A proposal is settled once the log has it (or it failed): only then is the committed share what counts.
        shares.settle();
        if (!leads.getAsBoolean())
        {
            shares.dropProposals();
            return;
        }
        final Map<String, Integer> proposals = new HashMap<>();
        for (final CompiledPolicy policy : regional)
        {
            if (shares.proposing(policy.id()))
            {
                continue;
            }
            final int committed = shares.committed(policy);
            final int next = next(policy, committed, nowMillis);
            if (next != committed)
            {
                proposals.put(policy.id(), next);
            }
        }
        if (proposals.isEmpty())
        {
            shares.publish();
            return;
        }
        shares.propose(proposals); // a lower share counts from now on
        final PolicyCommand command = PolicyState.command("region:" + config.region(), nowMillis)
            .setRegionShares(RegionShares.newBuilder().putAllSharePpm(proposals)).build();
        CompletableFuture<PolicyState.Outcome> outcome;
        try
        {
            outcome = control.submit(command);
        }
        catch (final RuntimeException e)
        {
            outcome = CompletableFuture.failedFuture(e);
        }
        outcome.whenComplete((result, failure) ->
        {
            if (failure != null || result.status() != PolicyState.Status.OK)
            {
                shares.withdraw(proposals); // not in the log: the committed shares stand
            }
        });
    }

    /**
     * The share {@code policy} should have next, from this region's demand and every other region's leader's report.
     */
    private int next(final CompiledPolicy policy, final int committed, final long nowMillis)
    {
        final String id = policy.id();
        double own = demand.of(id);
        final Map<String, ShareAllocator.PeerView> peers = new HashMap<>();
        for (final String region : config.regions())
        {
            if (region.equals(config.region()))
            {
                own += heard.regionDemand(region, id, nowMillis); // this region's other nodes, when listed
                continue;
            }
            final RegionReport report = heard.leaderReport(region);
            if (report != null)
            {
                final long at = Timestamps.toMillis(report.getAt());
                peers.put(region, new ShareAllocator.PeerView(heard.claimedShare(region, id, at),
                    heard.regionDemand(region, id, nowMillis), at));
            }
        }
        return allocator.next(nowMillis, shares.floor(policy), committed, own, peers);
    }
}
