package dev.limiter.cli;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.policy.AuditPage;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.HotKey;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.RollbackRequest;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.protocol.policy.ShardHotKeys;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * {@code ./limiter drill}: the pilot's drills against a running cluster, each bounded in time,
 * each ending with a verdict and its evidence. A drill puts a policy of its own ({@code drill-*},
 * owner {@code drill}, audited like any change) and deletes it when done. Only decisions a node
 * made count as answers; the SDK's local ones are reported beside them.
 */
@Command(
    name = "drill",
    mixinStandardHelpOptions = true,
    description = {
        "Runs the pilot's drills against a running cluster and prints a verdict with its evidence:",
        "  rollback       a bad policy version is rolled back: in force on every node within 1 s, and audited",
        "  hot-tenant     one tenant takes most calls: the nodes' hot-key report names it, and its grants stay",
        "                 within burst + rate x time",
        "  spike          a tenant jumps to 20x its rate (20/s to 400/s): it is held to its limit, the others",
        "                 keep every grant and their p99 (at most twice, or 10 ms above, the baseline's)",
        "  leader-kill    SIGKILL of the leader's process under STRICT and FAST traffic: STRICT grants never",
        "                 beyond burst + rate x time, FAST within its published failover bound, a node decides",
        "                 again within 1 s (for the drill's client and for a client made after the kill); the",
        "                 node is restarted as it was and must rejoin",
        "  store-failure  SIGKILL of every node: the fail-open route spends at most its emergency budget, the",
        "                 fail-closed one refuses every call; every call ends within its deadline + 50 ms;",
        "                 every node is restarted; the degraded window reaches the audit log; the first",
        "                 second back grants at most 1.2x the rate (no pent-up burst)",
        "  all            the five in turn",
        "Each drill puts policies of its own (drill-*, owner drill) through the admin API and deletes them after.",
        "leader-kill and store-failure stop node processes on this machine (found by the pid their STATUS",
        "reports; nodes started with --data-dir, as ./limiter cluster's are) and start them again with the",
        "same command line, environment and directory (output appended to <data dir>/node.log, new pid in",
        "<data dir>/node.pid, which ./limiter cluster stops with the rest).",
        "  ./limiter drill all --server 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403",
        "Exit status: 0 every drill passed, 1 one failed or the cluster did not answer, 2 bad input."},
    sortOptions = false)
public final class DrillCommand extends AdminCommand
{
    private static final String PREFIX = "limiter drill: ";
    private static final long SECOND = 1_000_000_000L;
    private static final List<String> ALL = List.of("rollback", "hot-tenant", "spike", "leader-kill", "store-failure");

    @Parameters(arity = "1..*", paramLabel = "DRILL",
        description = "rollback, hot-tenant, spike, leader-kill, store-failure, or all (the five in that order); several may be named.")
    List<String> drills;

    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT",
        description = "Data addresses of the nodes (default: ${DEFAULT-VALUE}, ./limiter cluster's).")
    List<String> servers = List.of("127.0.0.1:7401", "127.0.0.1:7402", "127.0.0.1:7403");

    @Option(names = "--seconds", paramLabel = "S", description = "Length of each traffic phase (default: ${DEFAULT-VALUE}).")
    int seconds = 3;

    @Mixin
    AdminClient.Options admin;

    private DrillCommand(final AdminClient.Io io)
    {
        super(io);
    }

    /**
     * Runs {@code ./limiter drill} with these arguments.
     *
     * @return 0 every drill passed, 1 one failed or the cluster did not answer, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err, final Map<String, String> env,
                          final Path workDir)
    {
        return AdminCommand.run(DrillCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(DrillCommand::run, args);
    }

    /** One drill's outcome: passed or not, and what was seen. */
    record DrillVerdict(String drill, boolean passed, Map<String, Object> evidence)
    {
        String json()
        {
            final StringBuilder out = new StringBuilder("{\"drill\":\"").append(drill).append("\",\"verdict\":\"")
                .append(passed ? "PASS" : "FAIL").append("\",\"evidence\":{");
            String sep = "";
            for (final Map.Entry<String, Object> e : evidence.entrySet())
            {
                out.append(sep).append('"').append(e.getKey()).append("\":");
                out.append(e.getValue() instanceof Number || e.getValue() instanceof Boolean ? String.valueOf(e.getValue()) :
                    "\"" + String.valueOf(e.getValue()).replace("\\", "\\\\").replace("\"", "\\\"") + "\"");
                sep = ",";
            }
            return out.append("}}").toString();
        }
    }

    @Override
    public Integer call() throws AdminClient.Failure
    {
        final List<String> toRun = new ArrayList<>();
        for (final String name : drills)
        {
            switch (name)
            {
                case "all" -> toRun.addAll(ALL);
                case "rollback", "hot-tenant", "spike", "leader-kill", "store-failure" -> toRun.add(name);
                default -> throw AdminClient.usage("unknown drill '" + name + "': " + String.join(", ", ALL) + " or all");
            }
        }
        if (seconds < 1 || seconds > 60)
        {
            throw AdminClient.usage("--seconds: 1 to 60, was " + seconds);
        }
        final List<String> adminAddresses = List.copyOf(admin.admin);
        final AdminClient api = admin.connect(io);
        boolean allPassed = true;
        try (LimiterClient client = LimiterClient.builder().endpoints(servers.toArray(String[]::new)).deadline(Duration.ofMillis(500))
            .build())
        {
            if (client.stats().openConnections() == 0)
            {
                throw AdminClient.failed("no node of " + servers + " answered; start the cluster (./limiter cluster) " +
                    "or name its data addresses with --server");
            }
            final FailureDrills failures = new FailureDrills(this, api, servers, seconds);
            for (final String name : toRun)
            {
                final DrillVerdict verdict = switch (name)
                {
                    case "rollback" -> rollback(api, client, adminAddresses);
                    case "hot-tenant" -> hotTenant(api, client, adminAddresses);
                    case "spike" -> spike(api, client);
                    case "leader-kill" -> failures.leaderKill();
                    default -> failures.storeFailure();
                };
                allPassed &= verdict.passed();
                print(verdict);
            }
        }
        return allPassed ? 0 : 1;
    }

    private void print(final DrillVerdict verdict)
    {
        if (admin.json)
        {
            io.out().println(verdict.json());
            return;
        }
        io.out().println(verdict.drill() + ": " + (verdict.passed() ? "PASS" : "FAIL"));
        verdict.evidence().forEach((k, v) -> io.out().println("  " + k + ": " + v));
    }

    // ---------------------------------------------------------------- rollback

    private DrillVerdict rollback(final AdminClient api, final LimiterClient client, final List<String> adminAddresses)
        throws AdminClient.Failure
    {
        final String id = "drill-rollback";
        final Map<String, Object> evidence = new LinkedHashMap<>();
        final Descriptor request = Descriptor.of("drill", "/drill/rollback");
        try
        {
            final long good = put(api, policy(id, "/drill/rollback", 1000, 1000), "drill: the good version").getVersion().getPolicy().getVersion();
            final long bad = put(api, policy(id, "/drill/rollback", 1, 1), "drill: a bad version (1 a second)").getVersion().getPolicy().getVersion();
            // The bad version is in force: a second call is refused by a node.
            final long badSeen = awaitVersion(client, request, bad, 5 * SECOND);
            final Decision second = client.acquireBlocking(request, 1);
            evidence.put("badVersion", bad);
            evidence.put("badVersionRefusedASecondCall", !second.allowed() && !second.degraded());
            final long start = System.nanoTime();
            final ChangeResult rolled = api.call("POST", PolicyCommand.path(id) + "/rollback",
                RollbackRequest.newBuilder().setToVersion(good).setReason("drill: roll back the bad version").build(),
                ChangeResult.getDefaultInstance());
            final long rollbackVersion = rolled.getVersion().getPolicy().getVersion();
            // In force everywhere: every node's admin API shows the version, and a node decides with it.
            final Map<String, Long> perNode = new LinkedHashMap<>();
            for (final String address : adminAddresses)
            {
                final long at = awaitNodeVersion(address, id, rollbackVersion, start + 5 * SECOND);
                if (at >= 0)
                {
                    perNode.put(address, (at - start) / 1_000_000);
                }
            }
            final long decidedAt = awaitVersion(client, request, rollbackVersion, 5 * SECOND);
            final long slowestMillis = perNode.values().stream().mapToLong(Long::longValue).max().orElse(-1);
            evidence.put("rolledBackTo", good + " (as version " + rollbackVersion + ")");
            evidence.put("inForceOnNodesAfterMs", perNode.toString());
            evidence.put("decidedWithItAfterMs", decidedAt < 0 ? -1 : (decidedAt - start) / 1_000_000);
            final AuditPage audit = api.call("GET", "/v1/audit?policy=" + AdminClient.encode(id), null, AuditPage.getDefaultInstance());
            final boolean audited = audit.getRecordsList().stream().anyMatch(r -> r.getAction().equals("POLICY_ROLLED_BACK") &&
                r.getVersion() == rollbackVersion);
            evidence.put("audited", audited);
            final boolean passed = badSeen >= 0 && (boolean)evidence.get("badVersionRefusedASecondCall") && !perNode.isEmpty() &&
                slowestMillis >= 0 && slowestMillis <= 1000 && decidedAt >= 0 && (decidedAt - start) <= SECOND && audited;
            evidence.put("expected", "the rollback in force on every node that answers and decided with within 1 s, and audited");
            return new DrillVerdict("rollback", passed, evidence);
        }
        finally
        {
            delete(api, id);
        }
    }

    /** Calls until a node decides with {@code version} of the request's policy: when it did, or -1. */
    private static long awaitVersion(final LimiterClient client, final Descriptor request, final long version, final long withinNanos)
    {
        final long end = System.nanoTime() + withinNanos;
        while (System.nanoTime() < end)
        {
            final Decision d = client.acquireBlocking(request, 1);
            if (!d.degraded() && d.policyVersion() == version)
            {
                return System.nanoTime();
            }
            LockSupport.parkNanos(2_000_000);
        }
        return -1;
    }

    /** Calls until a node decides the request with policy {@code id} (in force once applied where it is decided). */
    static void awaitPolicy(final LimiterClient client, final Descriptor request, final String id) throws AdminClient.Failure
    {
        final long end = System.nanoTime() + 5 * SECOND;
        while (System.nanoTime() < end)
        {
            final Decision d = client.acquireBlocking(request, 1);
            if (!d.degraded() && id.equals(d.policyId()))
            {
                return;
            }
            LockSupport.parkNanos(2_000_000);
        }
        throw AdminClient.failed("the drill's policy " + id + " was not in force within 5 s");
    }

    /** Polls one node's admin API until it holds {@code version} of the policy: when it did, or -1 (or unreachable). */
    private long awaitNodeVersion(final String address, final String id, final long version, final long deadline)
    {
        try
        {
            final AdminClient one = node(address);
            while (System.nanoTime() < deadline)
            {
                try
                {
                    if (one.call("GET", PolicyCommand.path(id), null, Policy.getDefaultInstance()).getVersion() == version)
                    {
                        return System.nanoTime();
                    }
                }
                catch (final AdminClient.Failure e)
                {
                    if (e.getMessage().contains("no admin endpoint answered"))
                    {
                        return -1; // not a node of this cluster (the defaults list a single node's port too)
                    }
                }
                LockSupport.parkNanos(5_000_000);
            }
            return -1;
        }
        catch (final AdminClient.Failure e)
        {
            return -1;
        }
    }

    /** A client of one node's admin API alone (with the options' token, timeout and TLS). */
    private AdminClient node(final String address) throws AdminClient.Failure
    {
        final List<String> all = admin.admin;
        admin.admin = List.of(address);
        try
        {
            return admin.connect(io); // takes a copy of the addresses
        }
        finally
        {
            admin.admin = all;
        }
    }

    // ---------------------------------------------------------------- hot tenant

    private DrillVerdict hotTenant(final AdminClient api, final LimiterClient client, final List<String> adminAddresses)
        throws AdminClient.Failure
    {
        final String id = "drill-hot";
        final long rate = 200;
        final Map<String, Object> evidence = new LinkedHashMap<>();
        try
        {
            put(api, policy(id, "/drill/hot", rate, rate), "drill: one tenant takes most calls");
            awaitPolicy(client, Descriptor.of("drill-warm", "/drill/hot"), id);
            final String hot = "drill-hot-tenant";
            final Tally hotTally = new Tally();
            final Tally others = new Tally();
            // 1,000 calls a second: four in five for the hot tenant, the rest over 50 others.
            final long elapsed = drive(client, 1_000, seconds, i -> i % 5 != 4 ? Descriptor.of(hot, "/drill/hot") :
                Descriptor.of("drill-tenant-" + (i % 50), "/drill/hot"), i -> i % 5 != 4 ? hotTally : others);
            final long bound = rate + rate * (elapsed + SECOND / 10) / SECOND; // burst + rate x (time + 0.1 s of slack)
            evidence.put("hotTenantCalls", hotTally.sent.get());
            evidence.put("hotTenantGrantedByNodes", hotTally.allowed.get());
            evidence.put("grantBound", bound + " (burst " + rate + " + " + rate + "/s x " + String.format(Locale.ROOT, "%.2f", elapsed / 1e9) + " s)");
            evidence.put("decidedLocally", hotTally.local.get() + others.local.get() + localReasons(hotTally, others));
            // The nodes report their busiest keys about once a second.
            String top = null;
            double share = 0;
            final long end = System.nanoTime() + 3 * SECOND;
            while (top == null && System.nanoTime() < end)
            {
                for (final String address : adminAddresses)
                {
                    final HotKeyReport report = hotKeys(address);
                    for (final ShardHotKeys shard : report.getShardsList())
                    {
                        if (shard.getTopCount() > 0 && shard.getTop(0).getPolicyId().equals(id) && shard.getTop(0).getShare() > share)
                        {
                            final HotKey key = shard.getTop(0);
                            top = key.getKey();
                            share = key.getShare();
                        }
                    }
                }
                if (top == null)
                {
                    LockSupport.parkNanos(200_000_000);
                }
            }
            evidence.put("hotKeyReported", top == null ? "none" : top + String.format(Locale.ROOT, " (%.0f%% of its shard's tokens)", share * 100));
            final boolean passed = hotTally.allowed.get() <= bound && hotTally.allowed.get() > 0 && top != null && top.contains(hot) &&
                hotTally.local.get() == 0;
            evidence.put("expected", "the hot tenant named by the nodes' hot-key report, its node-decided grants within the bound, none decided locally");
            return new DrillVerdict("hot-tenant", passed, evidence);
        }
        finally
        {
            delete(api, id);
        }
    }

    private HotKeyReport hotKeys(final String address)
    {
        try
        {
            return node(address).call("GET", "/v1/hot-keys", null, HotKeyReport.getDefaultInstance());
        }
        catch (final AdminClient.Failure e)
        {
            return HotKeyReport.getDefaultInstance(); // not a node of this cluster
        }
    }

    // ---------------------------------------------------------------- spike

    private DrillVerdict spike(final AdminClient api, final LimiterClient client) throws AdminClient.Failure
    {
        final String id = "drill-spike";
        final long rate = 20;
        final Map<String, Object> evidence = new LinkedHashMap<>();
        try
        {
            put(api, policy(id, "/drill/spike", rate, rate), "drill: a tenant jumps to 20x its rate");
            awaitPolicy(client, Descriptor.of("drill-warm", "/drill/spike"), id);
            // Baseline: ten tenants at half their rate each (100 calls a second in all).
            final Tally calmBefore = new Tally();
            drive(client, 100, seconds, i -> Descriptor.of("drill-spike-" + (i % 10), "/drill/spike"), i -> calmBefore);
            // Spike: tenant 0 at 20x its rate (400 a second) beside the nine others as before (90).
            final Tally spiking = new Tally();
            final Tally calm = new Tally();
            final long elapsed = drive(client, 490, seconds, i -> i % 49 < 9 ? Descriptor.of("drill-spike-" + (1 + i % 49), "/drill/spike") :
                Descriptor.of("drill-spike-0", "/drill/spike"), i -> i % 49 < 9 ? calm : spiking);
            final long bound = rate + rate * (elapsed + SECOND / 10) / SECOND + rate; // its bucket was full from the baseline
            final double p99Before = calmBefore.latency.getValueAtPercentile(99) / 1e6;
            final double p99During = calm.latency.getValueAtPercentile(99) / 1e6;
            evidence.put("othersGrantedBefore", calmBefore.allowed.get() + " of " + calmBefore.sent.get());
            evidence.put("othersGrantedDuring", calm.allowed.get() + " of " + calm.sent.get());
            evidence.put("othersP99MsBefore", String.format(Locale.ROOT, "%.2f", p99Before));
            evidence.put("othersP99MsDuring", String.format(Locale.ROOT, "%.2f", p99During));
            evidence.put("spikingTenantCalls", spiking.sent.get());
            evidence.put("spikingTenantGrantedByNodes", spiking.allowed.get());
            evidence.put("grantBound", bound);
            evidence.put("decidedLocally", calmBefore.local.get() + calm.local.get() + spiking.local.get() +
                localReasons(calmBefore, calm, spiking));
            final boolean passed = calmBefore.allowed.get() == calmBefore.sent.get() && calm.allowed.get() == calm.sent.get() &&
                spiking.allowed.get() <= bound && p99During <= Math.max(2 * p99Before, p99Before + 10) &&
                calmBefore.local.get() + calm.local.get() + spiking.local.get() == 0;
            evidence.put("expected", "the others granted every call by a node in both phases with p99 at most twice (or 10 ms above) the " +
                "baseline; the spiking tenant within burst + rate x time");
            return new DrillVerdict("spike", passed, evidence);
        }
        finally
        {
            delete(api, id);
        }
    }

    // ---------------------------------------------------------------- traffic

    /** Node answers, local ones and latency of one group of calls. */
    static final class Tally
    {
        final AtomicLong sent = new AtomicLong();
        /** Granted by a node. */
        final AtomicLong allowed = new AtomicLong();
        /** Decided by the SDK on its own (degraded), granted or not. */
        final AtomicLong local = new AtomicLong();
        /** Granted by the SDK on its own. */
        final AtomicLong localAllowed = new AtomicLong();
        /** Local decisions by reason. */
        final ConcurrentHashMap<String, Long> localReasons = new ConcurrentHashMap<>();
        /** Refused by the SDK with CLUSTER_UNAVAILABLE (a fail-closed policy while no node answers). */
        final AtomicLong unavailable = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final Histogram latency = new Histogram(60 * SECOND, 2);
        /** Calls due from this time ({@link System#nanoTime}) on are watched for the first node answer. */
        volatile long watchFrom = Long.MAX_VALUE;
        /** When the first node answer to a watched call came, or {@link Long#MAX_VALUE}. */
        final AtomicLong firstNodeAnswerAt = new AtomicLong(Long.MAX_VALUE);
        /** Every grant when kept ({@link #keepGrants}): {due, node decided ? 1 : 0}. */
        final ConcurrentLinkedQueue<long[]> grants = new ConcurrentLinkedQueue<>();
        volatile boolean keepGrants;

        /** From the call to its answer (the latency above counts from when the call was due, which a late caller adds to). */
        final Histogram callTime = new Histogram(60 * SECOND, 2);

        synchronized void record(final long fromDue, final long fromCall)
        {
            latency.recordValue(Math.min(fromDue, 60 * SECOND));
            callTime.recordValue(Math.min(fromCall, 60 * SECOND));
        }

        /** Grants kept ({@link #keepGrants}) whose call was due in [from, to), and of those how many the SDK made. */
        long[] grantedBetween(final long from, final long to)
        {
            long all = 0;
            long local = 0;
            for (final long[] grant : grants)
            {
                if (grant[0] >= from && grant[0] < to)
                {
                    all++;
                    local += 1 - grant[1];
                }
            }
            return new long[] {all, local};
        }

        void decided(final Decision d, final long due)
        {
            if (d.degraded())
            {
                local.incrementAndGet();
                localReasons.merge(d.reason().name(), 1L, Long::sum);
                if (d.allowed())
                {
                    localAllowed.incrementAndGet();
                }
                else if (d.reason() == ReasonCode.CLUSTER_UNAVAILABLE)
                {
                    unavailable.incrementAndGet();
                }
            }
            else
            {
                if (due >= watchFrom)
                {
                    firstNodeAnswerAt.accumulateAndGet(System.nanoTime(), Math::min);
                }
                if (d.allowed())
                {
                    allowed.incrementAndGet();
                }
            }
            if (d.allowed() && keepGrants)
            {
                grants.add(new long[] {due, d.degraded() ? 0 : 1});
            }
        }

        /** Milliseconds from {@code since} to the first node answer of a watched call, or -1 when none came. */
        long firstNodeAnswerMillisAfter(final long since)
        {
            final long at = firstNodeAnswerAt.get();
            return at == Long.MAX_VALUE ? -1 : (at - since) / 1_000_000;
        }
    }

    /** " (by reason: {...})" when any tally holds local decisions, else "". */
    static String localReasons(final Tally... tallies)
    {
        final Map<String, Long> all = new java.util.TreeMap<>();
        for (final Tally tally : tallies)
        {
            tally.localReasons.forEach((reason, count) -> all.merge(reason, count, Long::sum));
        }
        return all.isEmpty() ? "" : " (by reason: " + all + ")";
    }

    /**
     * Calls at {@code perSecond} for {@code seconds}, open loop, each counted in its tally; waits for the
     * last answers. Returns the nanoseconds from the first call to the last answer.
     */
    static long drive(final LimiterClient client, final int perSecond, final int seconds, final IntFunction<Descriptor> which,
        final IntFunction<Tally> tallyOf)
    {
        return drive(client, perSecond, (long)perSecond * seconds, new AtomicBoolean(), which, tallyOf);
    }

    /**
     * Calls at {@code perSecond}, open loop, until {@code maxCalls} are sent or {@code stop} is set,
     * each counted in its tally; waits for the last answers (at most 5 s each). Returns the
     * nanoseconds from the first call to the last answer.
     */
    static long drive(final LimiterClient client, final int perSecond, final long maxCalls, final AtomicBoolean stop,
        final IntFunction<Descriptor> which, final IntFunction<Tally> tallyOf)
    {
        final long interval = SECOND / perSecond;
        final long start = System.nanoTime();
        final List<CompletableFuture<Decision>> pending = new ArrayList<>();
        for (int i = 0; i < maxCalls && !stop.get(); i++)
        {
            final long due = start + i * interval;
            long wait;
            while ((wait = due - System.nanoTime()) > 0)
            {
                LockSupport.parkNanos(wait);
            }
            final Tally tally = tallyOf.apply(i);
            tally.sent.incrementAndGet();
            final long called = System.nanoTime();
            pending.add(client.acquire(which.apply(i), 1).whenComplete((d, e) ->
            {
                final long now = System.nanoTime();
                tally.record(now - due, now - called);
                if (e != null)
                {
                    tally.failed.incrementAndGet();
                }
                else
                {
                    tally.decided(d, due);
                }
            }));
        }
        for (final CompletableFuture<Decision> call : pending)
        {
            try
            {
                call.get(5, TimeUnit.SECONDS);
            }
            catch (final Exception e)
            {
                // counted as failed above
            }
        }
        return System.nanoTime() - start;
    }

    // ---------------------------------------------------------------- policies

    static Policy policy(final String id, final String route, final long rate, final long burst)
    {
        return Policy.newBuilder().setId(id).setSelector(Selector.newBuilder().setRoute(route)).setRate(rate).setBurst(burst)
            .setOwner("drill").build();
    }

    /** Puts a drill's policy; a cluster that has no ready leader yet (just started, or electing) gets 10 s to have one. */
    static ChangeResult put(final AdminClient api, final Policy policy, final String reason) throws AdminClient.Failure
    {
        final long end = System.nanoTime() + 10 * SECOND;
        while (true)
        {
            try
            {
                return api.call("PUT", PolicyCommand.path(policy.getId()), policy.toBuilder().setReason(reason).build(),
                    ChangeResult.getDefaultInstance());
            }
            catch (final AdminClient.Failure e)
            {
                if (System.nanoTime() > end || !(e.getMessage().contains("retry")))
                {
                    throw e;
                }
                LockSupport.parkNanos(200_000_000);
            }
        }
    }

    void delete(final AdminClient api, final String id)
    {
        try
        {
            api.call("DELETE", PolicyCommand.path(id) + "?reason=" + AdminClient.encode("drill done"), null, ChangeResult.getDefaultInstance());
        }
        catch (final AdminClient.Failure e)
        {
            io.err().println(PREFIX + "could not delete the drill's policy " + id + ": " + e.getMessage() +
                " (./limiter policy delete " + id + " --reason \"drill done\")");
        }
    }
}
