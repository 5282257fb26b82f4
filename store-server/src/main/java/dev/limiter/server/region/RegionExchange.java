package dev.limiter.server.region;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.status.PeerRegion;
import dev.limiter.protocol.status.RegionShare;
import dev.limiter.protocol.status.RegionStatus;
import dev.limiter.server.admin.NodeStatus;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.RegionalShares;
import dev.limiter.server.engine.Shard;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import javax.net.ssl.SSLContext;

/**
 * This node's part in the regions' exchange (docs/regions.md): it builds the parts, runs their
 * tick, and gives the node its region status and meters. Every node answers
 * {@code GET /region/v1/report} ({@link ReportEndpoint}) with its region's shares of the regional
 * policies and the demand its own shards saw ({@link DemandMeter}), and a few times a slot asks
 * every listed node of the other regions for theirs ({@link PeerPoller}, {@link HeardReports}).
 * The node that leads its region's control group also moves its region's shares as
 * {@link ShareAllocator} allows ({@link ShareMover}), through REGION_SHARES commands in its
 * region's own log (so a new leader, or the region after a restart, goes on from the last
 * committed shares). Nothing of this is on the request path: the shards read the shares as they
 * are ({@link NodeShares}, as {@link RegionalShares}); a region cut off from the others keeps
 * deciding with the shares it has.
 *
 * <p>With several Raft groups every other group's leader copies the shares this node has applied
 * into its group's log ({@link RegionGroups}, {@link GroupCopier}), and a group's shards decide
 * with no more than their group's copy allows: a leader that has not heard of a lowering (cut off
 * from the control group, say) keeps its group's copy, and the region reports, besides its own
 * shares, the most any generation from the oldest copy on gave ({@link ShareHistory}), so no other
 * region raises into a share that some node may still decide with.
 */
public final class RegionExchange implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(RegionExchange.class);

    private final RegionConfig config;
    private final PolicyState state;
    private final BooleanSupplier leads;
    private final RegionGroups groups;
    private final NodeShares shares;
    private final GroupCopier copier;
    private final HeardReports heard;
    private final PeerPoller poller;
    private final DemandMeter demand;
    private final ShareMover mover;
    private final ReportEndpoint endpoint;
    private final ScheduledExecutorService ticker;
    private final long tickMillis;
    /** Regional policies whose share and demand are metered already. */
    private final Set<String> metered = ConcurrentHashMap.newKeySet();
    private MeterRegistry registry;

    /**
     * @param leads      whether this node leads its region's control group now (true for a single node)
     * @param groups     the node's Raft groups ({@link RegionGroups#SINGLE} for one group or a single node)
     * @param persistent whether the region's committed shares survive a restart (a cluster: they are in its log); a
     *                   region that forgets them starts every regional policy from its floor, never from an equal
     *                   split it may not hold any more
     * @param tls        the node's TLS (its certificate as the client's, its CA to trust the other regions'
     *                   admin ports, which then speak HTTPS too), or null: plain HTTP
     */
    public RegionExchange(final RegionConfig config, final PolicyState state, final PolicyControl control,
        final List<Shard> shards, final BooleanSupplier leads, final RegionGroups groups, final boolean persistent,
        final SSLContext tls)
    {
        this.config = config;
        this.state = state;
        this.leads = leads;
        this.groups = groups;
        final ShareAllocator allocator =
            new ShareAllocator(config.region(), config.regions(), config.slotMillis(), config.guardMillis());
        final List<Shard> all = List.copyOf(shards);
        this.shares = new NodeShares(state, groups, allocator, persistent);
        this.copier = new GroupCopier(state, groups);
        this.heard = new HeardReports(config.slotMillis(), allocator.regions(), allocator.initialShare(),
            System::currentTimeMillis);
        this.poller = new PeerPoller(config, heard, tls);
        this.demand = new DemandMeter(ordinal -> asked(all, ordinal), System::nanoTime);
        this.mover = new ShareMover(config, allocator, shares, heard, demand, control, leads);
        this.endpoint = new ReportEndpoint(config, leads, shares, demand, System::currentTimeMillis);
        this.tickMillis = Math.max(5, config.slotMillis() / 10);
        this.ticker = Executors.newSingleThreadScheduledExecutor(r ->
        {
            final Thread thread = new Thread(r, "region-exchange");
            thread.setDaemon(true);
            return thread;
        });
    }

    private static long asked(final List<Shard> shards, final int ordinal)
    {
        long asked = 0;
        for (final Shard shard : shards)
        {
            asked += shard.asked(ordinal);
        }
        return asked;
    }

    /** Starts asking and moving shares, every tenth of a slot. */
    public RegionExchange start()
    {
        state.onChange(shares::publish);
        state.onRegionShares(() ->
        {
            shares.recordCommitted();
            shares.publish();
            copier.copy(); // at once: a lowering binds a group only once its copy is in the group's log
        });
        groups.onCopy(shares::publish);
        shares.recordCommitted();
        shares.publish();
        demand.start();
        ticker.scheduleWithFixedDelay(this::tickSafely, tickMillis, tickMillis, TimeUnit.MILLISECONDS);
        LOG.info("region {}: exchanging with {} every {} ms (slot {} ms, guard {} ms)", config.region(), config.peers(),
            tickMillis, config.slotMillis(), config.guardMillis());
        return this;
    }

    /** Registers the region meters (share, demand per regional policy; age of each region's last report). */
    public void bind(final MeterRegistry meters)
    {
        this.registry = meters;
        Gauge.builder("limiter.region.info", () -> 1)
            .description("The region this node belongs to (always 1; the region is the tag)")
            .tag("region", config.region()).register(meters);
        for (final String region : config.regions())
        {
            if (!region.equals(config.region()))
            {
                Gauge.builder("limiter.region.exchange.age", this, x ->
                    {
                        final long age = x.heard.reportAgeMillis(region);
                        return age < 0 ? Double.NaN : age / 1000.0;
                    }).baseUnit("seconds")
                    .description("Since the newest report of that region's leader (its wall clock; NaN before the " +
                        "first); grows while it is cut off")
                    .tag("region", region).register(meters);
            }
        }
    }

    /** Meters the share and demand of a regional policy, once bound, from the first tick that sees it. */
    private void meter(final String id)
    {
        if (registry != null && metered.add(id))
        {
            Gauge.builder("limiter.region.share", this, x -> x.shares.shareOf(id) / (double)ShareAllocator.WHOLE)
                .description("This region's share of a regional policy's global limit (what it decides with: 0 to 1)")
                .tag("policy", id).register(registry);
            Gauge.builder("limiter.region.demand", this, x -> x.demand.of(id))
                .description("Decisions per second this node was asked of a regional policy, smoothed over about " +
                    "a second")
                .tag("policy", id).register(registry);
        }
    }

    /** What the shards of shard {@code shard}'s group read. */
    public RegionalShares forShard(final int shard)
    {
        return shares.forShard(shard);
    }

    /** {@code GET /region/v1/report}: this node's report, to a caller holding the exchange token. */
    public NodeStatus.Answer report(final String authorization)
    {
        return endpoint.answer(authorization);
    }

    /** The shares this node decides with and reports (tests look into them). */
    NodeShares shares()
    {
        return shares;
    }

    private void tickSafely()
    {
        try
        {
            tick();
        }
        catch (final Throwable e)
        {
            // Anything thrown out of a periodic task cancels it for good: the shares would stop moving unseen.
            LOG.warn("region {}: exchange step failed: {}", config.region(), e.toString());
        }
    }

    private void tick()
    {
        poller.ask();
        copier.copy();
        final List<CompiledPolicy> regional = shares.regionalPolicies();
        demand.measure(regional);
        regional.forEach(policy -> meter(policy.id()));
        mover.move(regional, System.currentTimeMillis());
    }

    /**
     * The region part of the node's status ({@code status.proto}'s {@code RegionStatus}): for each
     * regional policy in force, this region's share as this node applied it, what this node's shards
     * decide with, and what this node tells the other regions; and how old each other region's
     * report is.
     *
     * @return the region's status as of now
     */
    public RegionStatus status()
    {
        final boolean leading = leads.getAsBoolean();
        final RegionStatus.Builder status = RegionStatus.newBuilder().setName(config.region())
            .setLeads(leading).setSlotMs(Math.toIntExact(config.slotMillis()));
        for (final CompiledPolicy policy : shares.regionalPolicies())
        {
            status.addShares(RegionShare.newBuilder().setPolicy(policy.id())
                .setShare(shares.sharePpm(policy) / (double)ShareAllocator.WHOLE)
                // Tenths of a decision per second: the smoothing makes finer digits noise.
                .setDemandPerSecond(Math.round(demand.of(policy.id()) * 10) / 10.0)
                .setDecidesWith(shares.decidesWith(policy, leading) / (double)ShareAllocator.WHOLE)
                .setReported(shares.reportedShare(policy) / (double)ShareAllocator.WHOLE));
        }
        for (final String region : config.regions())
        {
            if (!region.equals(config.region()))
            {
                status.addRegions(PeerRegion.newBuilder().setRegion(region)
                    .setReportAgeMs(heard.reportAgeMillis(region)));
            }
        }
        return status.build();
    }

    @Override
    public void close()
    {
        ticker.shutdownNow();
    }
}
