package dev.limiter.server.region;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.RegionReport;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.protocol.status.PeerRegion;
import dev.limiter.protocol.status.RegionShare;
import dev.limiter.protocol.status.RegionStatus;
import dev.limiter.server.admin.AdminToken;
import dev.limiter.server.admin.NodeStatus;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.engine.RegionalShares;
import dev.limiter.server.engine.Shard;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

/**
 * This node's part in the regions' exchange (docs/regions.md). Every node answers
 * {@code GET /region/v1/report} (with the exchange token) with its region's shares of the regional
 * policies and the demand its own shards saw. The node that leads its region's control group also,
 * a few times a slot, asks every node of the other regions for theirs, and moves its region's shares
 * as {@link ShareAllocator} allows, through REGION_SHARES commands in its region's own log (so a new
 * leader, or the region after a restart, goes on from the last committed shares). Nothing of this
 * is on the request path: the shards read the shares as they are ({@link RegionalShares}); a region
 * cut off from the others keeps deciding with the shares it has.
 *
 * <p>With several Raft groups every other group's leader copies the shares this node has applied
 * into its group's log ({@link RegionGroups}), and a group's shards decide with no more than their
 * group's copy allows: a leader that has not heard of a lowering (cut off from the control group,
 * say) keeps its group's copy, and the region reports, besides its own shares, the most any
 * generation from the oldest copy on gave ({@link ShareHistory}), so no other region raises into
 * a share that some node may still decide with.
 */
public final class RegionExchange implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(RegionExchange.class);
    private static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();
    private static final JsonFormat.Parser PARSER = JsonFormat.parser().ignoringUnknownFields();
    /** Most bytes of a report read from another node: one is a few KiB (a share and a demand per regional policy). */
    static final int MAX_REPORT_BYTES = 1 << 20;

    private final RegionConfig config;
    private final ShareAllocator allocator;
    private final PolicyState state;
    private final PolicyControl control;
    private final List<Shard> shards;
    private final BooleanSupplier leads;
    private final RegionGroups groups;
    /** What each group's shards read, by group. */
    private final GroupView[] views;
    /** Whether this node has a copy in flight to the group, by group. */
    private final AtomicBoolean[] copying;
    private final ShareHistory history;
    /** Whether committed shares outlive a restart (a cluster's log); a lone node's do not, so it starts from the floor. */
    private final boolean persistent;
    private final String scheme;
    private final HttpClient http;
    private final ScheduledExecutorService ticker;
    private final long tickMillis;

    /** Shares proposed and not yet committed, by policy id: a lower one is decided with at once, a higher one reported at once. */
    private final Map<String, Integer> pending = new ConcurrentHashMap<>();
    /** Latest report heard from each address of another region (or of this one's other nodes). */
    private final Map<String, Heard> heard = new ConcurrentHashMap<>();
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
    /** This node's demand per regional policy id (decisions asked per second, smoothed over about a second). */
    private final Map<String, Double> demand = new ConcurrentHashMap<>();
    private final Map<Integer, Long> askedBefore = new HashMap<>();
    private final Set<String> metered = ConcurrentHashMap.newKeySet();
    private MeterRegistry registry;
    private long measuredAt;

    private record Heard(String region, RegionReport report, long receivedAtMillis)
    {
    }

    /**
     * @param leads      whether this node leads its region's control group now (true for a single node)
     * @param groups     the node's Raft groups ({@link RegionGroups#SINGLE} for one group or a single node)
     * @param persistent whether the region's committed shares survive a restart (a cluster: they are in its log); a
     *                   region that forgets them starts every regional policy from its floor, never from an equal
     *                   split it may not hold any more
     * @param tls        the node's TLS (its certificate as the client's, its CA to trust the other regions'
     *                   admin ports, which then speak HTTPS too), or null: plain HTTP
     */
    public RegionExchange(final RegionConfig config, final PolicyState state, final PolicyControl control, final List<Shard> shards,
        final BooleanSupplier leads, final RegionGroups groups, final boolean persistent, final SSLContext tls)
    {
        this.persistent = persistent;
        this.scheme = tls == null ? "http://" : "https://";
        this.config = config;
        this.allocator = new ShareAllocator(config.region(), config.regions(), config.slotMillis(), config.guardMillis());
        this.state = state;
        this.control = control;
        this.shards = List.copyOf(shards);
        this.leads = leads;
        this.groups = groups;
        this.views = new GroupView[groups.count()];
        this.copying = new AtomicBoolean[groups.count()];
        for (int g = 0; g < views.length; g++)
        {
            views[g] = new GroupView(g);
            copying[g] = new AtomicBoolean();
        }
        this.history = new ShareHistory(allocator.initialShare());
        this.tickMillis = Math.max(5, config.slotMillis() / 10);
        final HttpClient.Builder client = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(config.slotMillis()));
        this.http = (tls == null ? client : client.sslContext(tls)).build();
        this.ticker = Executors.newSingleThreadScheduledExecutor(r ->
        {
            final Thread thread = new Thread(r, "region-exchange");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Starts asking and moving shares, every tenth of a slot. */
    public RegionExchange start()
    {
        state.onChange(this::publish);
        state.onRegionShares(() ->
        {
            history.record(state.committedShares());
            publish();
            copyToGroups(); // at once: a lowering binds a group only once its copy is in the group's log
        });
        groups.onCopy(this::publish);
        history.record(state.committedShares());
        publish();
        measuredAt = System.nanoTime();
        ticker.scheduleWithFixedDelay(this::tickSafely, tickMillis, tickMillis, TimeUnit.MILLISECONDS);
        LOG.info("region {}: exchanging with {} every {} ms (slot {} ms, guard {} ms)", config.region(), config.peers(), tickMillis,
            config.slotMillis(), config.guardMillis());
        return this;
    }

    /** Registers the region meters (share, demand per regional policy; age of each region's last report). */
    public void bind(final MeterRegistry meters)
    {
        this.registry = meters;
        Gauge.builder("limiter.region.info", () -> 1).description("The region this node belongs to (always 1; the region is the tag)")
            .tag("region", config.region()).register(meters);
        for (final String region : config.regions())
        {
            if (!region.equals(config.region()))
            {
                Gauge.builder("limiter.region.exchange.age", this, x ->
                    {
                        final long age = x.reportAgeMillis(region);
                        return age < 0 ? Double.NaN : age / 1000.0;
                    }).baseUnit("seconds")
                    .description("Since the newest report of that region's leader (its wall clock; NaN before the first); grows while it is cut off")
                    .tag("region", region).register(meters);
            }
        }
    }

    // ---------------------------------------------------------------- the shards' view

    /** What the shards of shard {@code shard}'s group read. */
    public RegionalShares forShard(final int shard)
    {
        return views[groups.groupOf(shard)];
    }

    /** One group's shares as its shards decide with them. */
    private final class GroupView implements RegionalShares
    {
        private final int group;
        /** What one token costs now, by policy ordinal (0: not a regional policy in force). */
        private volatile long[] unitsByOrdinal = new long[0];

        GroupView(final int group)
        {
            this.group = group;
        }

        @Override
        public long unitsPerToken(final CompiledPolicy policy)
        {
            final long[] byOrdinal = unitsByOrdinal;
            final int ordinal = policy.ordinal();
            final long units = ordinal < byOrdinal.length ? byOrdinal[ordinal] : 0;
            return units != 0 ? units : RegionalShares.unitsPerToken(decidingShare(policy, group)); // not cached (a shadow, or just put)
        }

        @Override
        public Limit limit(final CompiledPolicy policy, final int shard, final int shards)
        {
            return state.rateIfKnown(policy.ordinal(), policy.version(), 0, shard);
        }
    }

    /**
     * Recomputes what the shards read: after every change of the committed shares, of the proposals,
     * of a group's copy or of the policy set, so a lower share counts from its proposal and nothing
     * reads a stale one.
     */
    private synchronized void publish()
    {
        final List<CompiledPolicy> regional = regionalPolicies();
        int size = 0;
        for (final CompiledPolicy policy : regional)
        {
            size = Math.max(size, policy.ordinal() + 1);
        }
        for (final GroupView view : views)
        {
            final long[] byOrdinal = new long[size];
            for (final CompiledPolicy policy : regional)
            {
                byOrdinal[policy.ordinal()] = RegionalShares.unitsPerToken(decidingShare(policy, view.group));
            }
            view.unitsByOrdinal = byOrdinal;
        }
    }

    /**
     * The share group {@code group}'s shards decide with: this node's (a lower one proposed counts from
     * its proposal), and in any other group than the control group no more than the group's copy.
     */
    int decidingShare(final CompiledPolicy policy, final int group)
    {
        final int own = sharePpm(policy);
        if (group == 0)
        {
            return own;
        }
        final Integer copied = groups.copy(group).getSharePpmMap().get(policy.id());
        return Math.min(own, copied != null ? copied : unset(policy));
    }

    /** The share decided with: a lower one proposed counts from its proposal. */
    int sharePpm(final CompiledPolicy policy)
    {
        // The proposal first: a lowering committed and cleared between the two reads is then still seen in one of them.
        final Integer proposed = pending.get(policy.id());
        final int committed = committed(policy);
        return proposed == null ? committed : Math.min(committed, proposed);
    }

    private int committed(final CompiledPolicy policy)
    {
        final Integer share = state.regionShares().get(policy.id());
        return share != null ? share : unset(policy);
    }

    /** The share of a policy no REGION_SHARES command has named yet. */
    private int unset(final CompiledPolicy policy)
    {
        return persistent ? allocator.initialShare() : allocator.floor(minSharePercent(policy));
    }

    private static int minSharePercent(final CompiledPolicy policy)
    {
        return policy.source().getRegional().getMinSharePercent();
    }

    /**
     * What the other regions are told this region may decide with: a share being raised counts from
     * its proposal, and with several groups a share a group's copy may still allow counts until every
     * group has copied what came after it.
     */
    int reportedShare(final CompiledPolicy policy)
    {
        // The copies first: a copy made after they are read only drops generations that are still counted.
        final int copied = groups.count() > 1 ? history.highestSince(oldestCopy(), policy.id()) : 0;
        // The proposal next: a raise committed and cleared between the two reads is then still seen in one of them.
        final Integer proposed = pending.get(policy.id());
        final int committed = committed(policy);
        return Math.max(copied, proposed == null ? committed : Math.max(committed, proposed));
    }

    /** The oldest generation of the shares any group other than the control group holds a copy of, as applied here. */
    private long oldestCopy()
    {
        long oldest = Long.MAX_VALUE;
        for (int g = 1; g < groups.count(); g++)
        {
            oldest = Math.min(oldest, groups.copy(g).getGeneration());
        }
        return oldest;
    }

    /**
     * Every group this node leads, other than the control group, whose copy is older than the shares
     * this node applied gets them as its copy (one proposal in flight per group).
     */
    private void copyToGroups()
    {
        final RegionShares applied = state.committedShares();
        for (int g = 1; g < groups.count(); g++)
        {
            if (groups.copy(g).getGeneration() >= applied.getGeneration() || !groups.decides(g) || !copying[g].compareAndSet(false, true))
            {
                continue;
            }
            final int group = g;
            CompletableFuture<?> copied;
            try
            {
                copied = groups.propose(g, applied);
            }
            catch (final RuntimeException e)
            {
                copied = CompletableFuture.failedFuture(e);
            }
            copied.whenComplete((done, failure) -> copying[group].set(false)); // failed: the next tick tries again
        }
    }

    // ---------------------------------------------------------------- reports

    /** {@code GET /region/v1/report}: this node's report, to a caller holding the exchange token. */
    public NodeStatus.Answer report(final String authorization)
    {
        if (config.token() == null || !AdminToken.accepts(config.token(), authorization))
        {
            return new NodeStatus.Answer(401, "{\"error\":\"the region exchange needs 'Authorization: Bearer <region token>' " +
                "(--region-token or $LIMITER_REGION_TOKEN, the same in every region)\"}\n");
        }
        final RegionReport.Builder report = RegionReport.newBuilder().setRegion(config.region()).setLeader(leads.getAsBoolean())
            .setAt(Timestamps.fromMillis(System.currentTimeMillis()));
        for (final CompiledPolicy policy : regionalPolicies())
        {
            report.putSharePpm(policy.id(), reportedShare(policy));
            report.putDemandPerSecond(policy.id(), demand.getOrDefault(policy.id(), 0.0));
        }
        try
        {
            return new NodeStatus.Answer(200, PRINTER.print(report) + "\n");
        }
        catch (final InvalidProtocolBufferException e)
        {
            return new NodeStatus.Answer(500, "{\"error\":\"" + e.getMessage() + "\"}\n");
        }
    }

    private List<CompiledPolicy> regionalPolicies()
    {
        return state.index().policies().stream().filter(p -> p.regional() && !p.shadow()).toList();
    }

    private void ask()
    {
        for (final Map.Entry<String, List<String>> region : config.peers().entrySet())
        {
            for (final String address : region.getValue())
            {
                if (!inFlight.add(address))
                {
                    continue; // the previous question is still out
                }
                final CompletableFuture<HttpResponse<String>> answer;
                try
                {
                    final HttpRequest request = HttpRequest.newBuilder(URI.create(scheme + address + "/region/v1/report"))
                        .timeout(Duration.ofMillis(config.slotMillis())).header("Authorization", "Bearer " + config.token()).GET().build();
                    // The request timeout ends with the headers; a peer that stalls mid-body must not hold its slot forever.
                    answer = http.sendAsync(request, info -> new ReportBody(MAX_REPORT_BYTES))
                        .orTimeout(2 * config.slotMillis(), TimeUnit.MILLISECONDS);
                }
                catch (final RuntimeException e)
                {
                    inFlight.remove(address);
                    LOG.warn("region {}: cannot ask {}: {}", config.region(), address, e.toString());
                    continue;
                }
                answer.whenComplete((response, failure) ->
                {
                    inFlight.remove(address);
                    if (failure != null || response.statusCode() != 200)
                    {
                        if (failure != null && causedBy(failure, ReportBody.TooLarge.class))
                        {
                            LOG.warn("region {}: {} sent a report over {} bytes; not used", config.region(), address, MAX_REPORT_BYTES);
                        }
                        if (failure != null && causedBy(failure, SSLException.class))
                        {
                            LOG.warn("region {}: TLS with {} failed ({}): do the regions' certificates name the addresses in " +
                                "--region-peers, and does --tls-ca trust them?", config.region(), address, failure.getMessage());
                        }
                        if (response != null && response.statusCode() == 401)
                        {
                            LOG.warn("region {}: {} refused the exchange token (is --region-token the same in every region?)",
                                config.region(), address);
                        }
                        return;
                    }
                    try
                    {
                        final RegionReport.Builder report = RegionReport.newBuilder();
                        PARSER.merge(response.body(), report);
                        if (!report.getRegion().equals(region.getKey()))
                        {
                            LOG.warn("region {}: {} says it is in region '{}', configured as '{}'; its report is not used",
                                config.region(), address, report.getRegion(), region.getKey());
                            return;
                        }
                        heard.put(address, new Heard(region.getKey(), report.build(), System.currentTimeMillis()));
                    }
                    catch (final InvalidProtocolBufferException | RuntimeException e)
                    {
                        LOG.warn("region {}: unreadable report from {}: {}", config.region(), address, e.getMessage());
                    }
                });
            }
        }
    }

    private static boolean causedBy(final Throwable failure, final Class<? extends Throwable> kind)
    {
        for (Throwable t = failure; t != null; t = t.getCause())
        {
            if (kind.isInstance(t))
            {
                return true;
            }
        }
        return false;
    }

    /** The newest report of {@code region}'s leader, or null when none was heard. */
    private RegionReport leaderReport(final String region)
    {
        RegionReport newest = null;
        for (final Heard h : heard.values())
        {
            if (h.region().equals(region) && h.report().getLeader() &&
                (newest == null || Timestamps.toMillis(h.report().getAt()) > Timestamps.toMillis(newest.getAt())))
            {
                newest = h.report();
            }
        }
        return newest;
    }

    /**
     * The most any node of {@code region} that says it leads claimed of a policy in its reports of the
     * last two rounds of slots: two nodes may both say so for a moment (a leader deposed and not yet
     * aware of it), and the larger claim is the safe one to leave room for.
     */
    private int claimedShare(final String region, final String id, final long newestAt)
    {
        int most = -1;
        for (final Heard h : heard.values())
        {
            if (h.region().equals(region) && h.report().getLeader() &&
                newestAt - Timestamps.toMillis(h.report().getAt()) <= 2 * config.slotMillis() * allocator.regions())
            {
                most = Math.max(most, h.report().getSharePpmOrDefault(id, allocator.initialShare()));
            }
        }
        return most;
    }

    /** Milliseconds since the newest report of that region's leader was made (its clock), or -1 when none came yet. */
    long reportAgeMillis(final String region)
    {
        final RegionReport report = leaderReport(region);
        return report == null ? -1 : Math.max(0, System.currentTimeMillis() - Timestamps.toMillis(report.getAt()));
    }

    /** Demand of {@code region} for a policy: its nodes' reports of the last few slots, added up. */
    private double regionDemand(final String region, final String id, final long now)
    {
        double sum = 0;
        for (final Heard h : heard.values())
        {
            if (h.region().equals(region) && now - h.receivedAtMillis() <= 4 * config.slotMillis() * allocator.regions())
            {
                sum += h.report().getDemandPerSecondOrDefault(id, 0.0);
            }
        }
        return sum;
    }

    // ---------------------------------------------------------------- the tick

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
        ask();
        copyToGroups();
        final List<CompiledPolicy> regional = regionalPolicies();
        measureDemand(regional);
        final long now = System.currentTimeMillis();
        // A proposal is settled once the log has it (or it failed): only then is the committed share what counts.
        final Map<String, Integer> committedNow = state.regionShares();
        pending.entrySet().removeIf(p -> p.getValue().equals(committedNow.get(p.getKey())));
        if (!leads.getAsBoolean())
        {
            pending.clear();
            publish();
            return;
        }
        final Map<String, Integer> proposals = new HashMap<>();
        for (final CompiledPolicy policy : regional)
        {
            final String id = policy.id();
            if (pending.containsKey(id))
            {
                continue;
            }
            final int committed = committed(policy);
            double own = demand.getOrDefault(id, 0.0);
            final Map<String, ShareAllocator.PeerView> peers = new HashMap<>();
            for (final String region : config.regions())
            {
                if (region.equals(config.region()))
                {
                    own += regionDemand(region, id, now); // this region's other nodes, when listed
                    continue;
                }
                final RegionReport report = leaderReport(region);
                if (report != null)
                {
                    final long at = Timestamps.toMillis(report.getAt());
                    peers.put(region, new ShareAllocator.PeerView(claimedShare(region, id, at), regionDemand(region, id, now), at));
                }
            }
            final int next = allocator.next(now, allocator.floor(minSharePercent(policy)), committed, own, peers);
            if (next != committed)
            {
                proposals.put(id, next);
            }
        }
        if (proposals.isEmpty())
        {
            publish();
            return;
        }
        pending.putAll(proposals);
        publish(); // a lower share counts from now on
        final PolicyCommand command = PolicyState.command("region:" + config.region(), now)
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
                // Not in the log: the committed shares stand (only these proposals: a newer one for a policy stays).
                proposals.forEach(pending::remove);
                publish();
            }
        });
    }

    private void measureDemand(final List<CompiledPolicy> regional)
    {
        final long at = System.nanoTime();
        final double seconds = Math.max(1e-3, (at - measuredAt) / 1e9);
        measuredAt = at;
        final double alpha = Math.min(1.0, seconds); // about a second of memory
        for (final CompiledPolicy policy : regional)
        {
            long asked = 0;
            for (final Shard shard : shards)
            {
                asked += shard.asked(policy.ordinal());
            }
            final Long before = askedBefore.put(policy.ordinal(), asked);
            final double rate = before == null ? 0 : Math.max(0, asked - before) / seconds;
            demand.merge(policy.id(), alpha * rate, (old, add) -> old + alpha * (rate - old));
            meter(policy.id());
        }
    }

    private void meter(final String id)
    {
        if (registry != null && metered.add(id))
        {
            Gauge.builder("limiter.region.share", this, x -> x.shareOf(id) / (double)ShareAllocator.WHOLE)
                .description("This region's share of a regional policy's global limit (what it decides with: 0 to 1)")
                .tag("policy", id).register(registry);
            Gauge.builder("limiter.region.demand", this, x -> x.demand.getOrDefault(id, 0.0))
                .description("Decisions per second this node was asked of a regional policy, smoothed over about a second")
                .tag("policy", id).register(registry);
        }
    }

    /** The share decided with of the regional policy {@code id} in force, or 0 when there is none. */
    private double shareOf(final String id)
    {
        for (final CompiledPolicy policy : regionalPolicies())
        {
            if (policy.id().equals(id))
            {
                return sharePpm(policy);
            }
        }
        return 0;
    }

    // ---------------------------------------------------------------- status

    /** The most any shard of this node decides {@code policy} with now: over the groups it leads (0 when it leads none). */
    int decidesWith(final CompiledPolicy policy)
    {
        int most = leads.getAsBoolean() ? decidingShare(policy, 0) : 0;
        for (int g = 1; g < groups.count(); g++)
        {
            if (groups.decides(g))
            {
                most = Math.max(most, decidingShare(policy, g));
            }
        }
        return most;
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
        final RegionStatus.Builder status = RegionStatus.newBuilder().setName(config.region())
            .setLeads(leads.getAsBoolean()).setSlotMs(Math.toIntExact(config.slotMillis()));
        for (final CompiledPolicy policy : regionalPolicies())
        {
            status.addShares(RegionShare.newBuilder().setPolicy(policy.id())
                .setShare(sharePpm(policy) / (double)ShareAllocator.WHOLE)
                // Tenths of a decision per second: the smoothing makes finer digits noise.
                .setDemandPerSecond(Math.round(demand.getOrDefault(policy.id(), 0.0) * 10) / 10.0)
                .setDecidesWith(decidesWith(policy) / (double)ShareAllocator.WHOLE)
                .setReported(reportedShare(policy) / (double)ShareAllocator.WHOLE));
        }
        for (final String region : config.regions())
        {
            if (!region.equals(config.region()))
            {
                status.addRegions(PeerRegion.newBuilder().setRegion(region).setReportAgeMs(reportAgeMillis(region)));
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
