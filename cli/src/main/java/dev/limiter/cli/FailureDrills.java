package dev.limiter.cli;

import dev.limiter.cli.DrillCommand.Tally;
import dev.limiter.cli.DrillCommand.DrillVerdict;
import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.policy.AuditPage;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.Consistency;
import dev.limiter.protocol.policy.EmergencyBudget;
import dev.limiter.protocol.policy.FailureMode;
import dev.limiter.protocol.status.StatusReport;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * The drills that stop nodes: {@code leader-kill} (SIGKILL of the leader's process under STRICT and
 * FAST traffic) and {@code store-failure} (SIGKILL of every node). Each stops real processes on this
 * machine ({@link NodeProcess}) and starts them again as they were; only decisions a node made
 * count as answers, the SDK's own are counted beside them.
 */
final class FailureDrills
{
    private static final long SECOND = 1_000_000_000L;
    private static final long MILLI = 1_000_000L;
    /** How long stopped nodes get to be back (JVMs starting on a busy machine, an election, the log replayed). */
    private static final long RESTART_WITHIN = 90 * SECOND;

    private final DrillCommand drills;
    private final AdminClient api;
    private final List<String> servers;
    private final int seconds;

    FailureDrills(final DrillCommand drills, final AdminClient api, final List<String> servers, final int seconds)
    {
        this.drills = drills;
        this.api = api;
        this.servers = List.copyOf(servers);
        this.seconds = seconds;
    }

    // ---------------------------------------------------------------- leader kill

    DrillVerdict leaderKill() throws AdminClient.Failure
    {
        final String strictId = "drill-leader-strict";
        final String fastId = "drill-leader-fast";
        final long rate = 50;
        final Map<String, Object> evidence = new LinkedHashMap<>();
        try
        {
            // STRICT fails closed, so every grant in its count is a node's; FAST fails open as most routes do.
            DrillCommand.put(api, DrillCommand.policy(strictId, "/drill/leader-strict", rate, rate).toBuilder()
                .setConsistency(Consistency.STRICT).setFailureMode(FailureMode.CLOSED).build(), "drill: STRICT across a leader kill");
            DrillCommand.put(api, DrillCommand.policy(fastId, "/drill/leader-fast", rate, rate), "drill: FAST across a leader kill");
            try (LimiterClient client = client(Duration.ofMillis(100)))
            {
                DrillCommand.awaitPolicy(client, Descriptor.of("drill-warm", "/drill/leader-strict"), strictId);
                DrillCommand.awaitPolicy(client, Descriptor.of("drill-warm", "/drill/leader-fast"), fastId);
                final Status leader = leader();
                final NodeProcess process = NodeProcess.of(leader.address(), leader.pid());
                evidence.put("killed", leader.id() + " at " + leader.address() + " (pid " + leader.pid() + ", the leader)");
                final Tally strict = new Tally();
                final Tally fast = new Tally();
                final AtomicBoolean stop = new AtomicBoolean();
                // 400 calls a second, alternating: one tenant on each route, 4x its rate.
                final CompletableFuture<Long> traffic = traffic(() -> DrillCommand.drive(client, 400, Long.MAX_VALUE, stop,
                    i -> (i & 1) == 0 ? Descriptor.of("drill-leader", "/drill/leader-strict") : Descriptor.of("drill-leader", "/drill/leader-fast"),
                    i -> (i & 1) == 0 ? strict : fast));
                sleep(seconds * SECOND);
                final long killedAt = System.nanoTime();
                strict.watchFrom = killedAt;
                fast.watchFrom = killedAt;
                process.kill();
                final long[] freshClientMillis = {-1};
                final Thread fresh = new Thread(() -> freshClientMillis[0] = freshClientFirstNodeAnswer(killedAt), "drill-fresh-client");
                fresh.start();
                sleep(Math.max(2, seconds) * SECOND);
                joinQuietly(fresh, 15 * SECOND);
                final long restartedAt = System.nanoTime();
                process.start();
                final long rejoined = awaitRejoined(process.address(), restartedAt + RESTART_WITHIN);
                sleep(SECOND);
                stop.set(true);
                final long elapsed = traffic.join();
                final long strictBound = rate + rate * elapsed / SECOND;
                final long fastBound = rate + rate * elapsed / SECOND + rate + rate; // + the published bound: one burst + rate x 1 s
                final long servedAgain = Math.max(strict.firstNodeAnswerMillisAfter(killedAt), fast.firstNodeAnswerMillisAfter(killedAt));
                final boolean nodeAnsweredBoth = strict.firstNodeAnswerAt.get() != Long.MAX_VALUE && fast.firstNodeAnswerAt.get() != Long.MAX_VALUE;
                evidence.put("newLeader", leaderOrNone());
                evidence.put("strictGrantedByNodes", strict.allowed.get());
                evidence.put("strictBound", strictBound + " (burst " + rate + " + " + rate + "/s x " + seconds(elapsed) + " s)");
                evidence.put("strictGrantedLocally", strict.localAllowed.get());
                evidence.put("fastGrantedByNodes", fast.allowed.get());
                evidence.put("fastBound", fastBound + " (burst + rate x time + the failover bound: one burst + rate x 1 s)");
                evidence.put("decidedLocally", strict.local.get() + fast.local.get() + " (fast granted locally: " + fast.localAllowed.get() + ")" +
                    DrillCommand.localReasons(strict, fast));
                evidence.put("failedCalls", strict.failed.get() + fast.failed.get());
                evidence.put("nodeDecidedAgainAfterMs", nodeAnsweredBoth ? servedAgain : -1);
                evidence.put("freshClientNodeDecisionAfterMs", freshClientMillis[0]);
                evidence.put("restartedNodeRejoinedAfterMs", rejoined < 0 ? -1 : (rejoined - restartedAt) / MILLI);
                evidence.put("slowestCallMs", Math.max(strict.callTime.getMaxValue(), fast.callTime.getMaxValue()) / MILLI);
                final boolean passed = strict.allowed.get() > 0 && strict.allowed.get() <= strictBound && strict.localAllowed.get() == 0 &&
                    fast.allowed.get() <= fastBound && nodeAnsweredBoth && servedAgain <= 1000 && freshClientMillis[0] >= 0 &&
                    freshClientMillis[0] <= 1000 && rejoined >= 0 && strict.failed.get() + fast.failed.get() == 0;
                evidence.put("electionTimeoutMs", leader.electionTimeoutMs());
                // A cluster run with a longer election timeout trades this 1 s for fewer needless elections: say so.
                final String slower = leader.electionTimeoutMs() <= StatusCommand.DEFAULT_ELECTION_TIMEOUT_MILLIS ? "" :
                    " (this cluster runs --election-timeout-ms " + leader.electionTimeoutMs() +
                    ": its members wait at least that long, and up to about four times it, before they campaign)";
                evidence.put("expected", "STRICT node grants within burst + rate x time and none local, FAST within its bound, a node " +
                    "deciding again within 1 s of the kill for the running client and for a fresh one" + slower + ", no failed call, the node back");
                return new DrillVerdict("leader-kill", passed, evidence);
            }
        }
        finally
        {
            drills.delete(api, strictId);
            drills.delete(api, fastId);
        }
    }

    /** A client made right after the kill asks until a node decides: milliseconds from the kill, or -1 within 10 s. */
    private long freshClientFirstNodeAnswer(final long killedAt)
    {
        try (LimiterClient fresh = client(Duration.ofMillis(100)))
        {
            while (System.nanoTime() - killedAt < 10 * SECOND)
            {
                final Decision d = fresh.acquireBlocking(Descriptor.of("drill-fresh", "/drill/leader-fast"), 1);
                if (!d.degraded())
                {
                    return (System.nanoTime() - killedAt) / MILLI;
                }
                LockSupport.parkNanos(5 * MILLI);
            }
            return -1;
        }
        catch (final RuntimeException e)
        {
            return -1;
        }
    }

    // ---------------------------------------------------------------- store failure

    DrillVerdict storeFailure() throws AdminClient.Failure
    {
        final String openId = "drill-store-open";
        final String closedId = "drill-store-closed";
        final long rate = 100;
        final long emergencyPercent = 10;
        final long emergency = rate * emergencyPercent / 100; // tokens a second, and the budget's burst
        final Duration deadline = Duration.ofMillis(50);
        final Map<String, Object> evidence = new LinkedHashMap<>();
        try
        {
            // The drill's client gets the whole emergency budget (per instance), not its share of the fleet's.
            DrillCommand.put(api, DrillCommand.policy(openId, "/drill/store-open", rate, rate).toBuilder().setFailureMode(FailureMode.OPEN)
                .setEmergency(EmergencyBudget.newBuilder().setPercent((int)emergencyPercent).setPerInstance(true)).build(),
                "drill: fail open through a store failure");
            DrillCommand.put(api, DrillCommand.policy(closedId, "/drill/store-closed", rate, rate).toBuilder()
                .setFailureMode(FailureMode.CLOSED).build(), "drill: fail closed through a store failure");
            try (LimiterClient client = client(deadline))
            {
                DrillCommand.awaitPolicy(client, Descriptor.of("drill-warm", "/drill/store-open"), openId);
                DrillCommand.awaitPolicy(client, Descriptor.of("drill-warm", "/drill/store-closed"), closedId);
                final List<NodeProcess> processes = new ArrayList<>();
                for (final String server : servers)
                {
                    // A store failure stops every node: one that cannot be found is not left running unnoticed.
                    final Status node = statusWithin(server, 10 * SECOND);
                    if (node == null)
                    {
                        throw AdminClient.failed("node " + server + " did not answer STATUS within 10 s, so the drill cannot stop the"
                            + " whole store: start it or leave it out of --server (./limiter status --server " + server + "); nothing was stopped");
                    }
                    processes.add(NodeProcess.of(node.address(), node.pid()));
                }
                final Tally open = new Tally();
                final Tally closed = new Tally();
                open.keepGrants = true;
                closed.keepGrants = true;
                final AtomicBoolean stop = new AtomicBoolean();
                // 350 calls a second: 300 on the fail-open route (3x its rate, so a burst released at recovery would
                // show), 50 on the fail-closed one; one tenant each.
                final CompletableFuture<Long> traffic = traffic(() -> DrillCommand.drive(client, 350, Long.MAX_VALUE, stop,
                    i -> i % 7 == 6 ? Descriptor.of("drill-store", "/drill/store-closed") : Descriptor.of("drill-store", "/drill/store-open"),
                    i -> i % 7 == 6 ? closed : open));
                sleep(seconds * SECOND);
                final Instant killedWall = Instant.now().minusSeconds(1);
                final long killedAt = System.nanoTime();
                for (final NodeProcess process : processes)
                {
                    process.kill();
                }
                final long allKilledAt = System.nanoTime();
                evidence.put("killed", processes.stream().map(p -> p.address() + " (pid " + p.pid() + ")").toList().toString());
                sleep(Math.max(3, seconds) * SECOND);
                final long restartedAt = System.nanoTime();
                open.watchFrom = restartedAt;
                closed.watchFrom = restartedAt;
                for (final NodeProcess process : processes)
                {
                    process.start();
                }
                final long leaderAt = awaitLeader(restartedAt + RESTART_WITHIN);
                // The first node answer after the restart ends the outage; the SDK then ramps up for 2 s.
                while (open.firstNodeAnswerAt.get() == Long.MAX_VALUE && System.nanoTime() - restartedAt < RESTART_WITHIN)
                {
                    LockSupport.parkNanos(10 * MILLI);
                }
                final long recoveredAt = open.firstNodeAnswerAt.get();
                sleep(Math.max(3, seconds) * SECOND);
                stop.set(true);
                traffic.join();
                final boolean recovered = recoveredAt != Long.MAX_VALUE;
                final long outageEnd = recovered ? recoveredAt : System.nanoTime();
                final double outageSeconds = (outageEnd - killedAt) / 1e9;
                // One outage, one budget: what the SDK granted on its own from the kill to the first node answer.
                final long openLocal = open.grantedBetween(killedAt, outageEnd)[1];
                final long openLocalAfter = open.localAllowed.get() - openLocal;
                final long emergencyBound = emergency + (long)Math.ceil(emergency * outageSeconds);
                // Grants of calls due while no node process ran: only the SDK could have made them. (Counting up to
                // the open route's first answer instead counted a closed call due just before it that a restarted
                // node granted; the whole run's local grants on the fail-closed route are checked apart.)
                final long closedGranted = closed.grantedBetween(allKilledAt, restartedAt)[0];
                final long grantedFirstSecondBack = recovered ? open.grantedBetween(recoveredAt, recoveredAt + SECOND)[0] : 0;
                final long recoveryBound = rate * 12 / 10;
                final long slowest = Math.max(open.callTime.getMaxValue(), closed.callTime.getMaxValue());
                final boolean audited = recovered && degradedWindowAudited(killedWall, openId, 10 * SECOND);
                evidence.put("outageSeconds", seconds(outageEnd - killedAt));
                evidence.put("openGrantedLocally", openLocal);
                evidence.put("emergencyBudget", emergencyBound + " (burst " + emergency + " + " + emergency + "/s x the outage)");
                evidence.put("openGrantedLocallyAfterTheFirstAnswer", openLocalAfter + " (a new outage: the SDK lost the cluster again " +
                    "while it came back)");
                evidence.put("closedGrantedDuringOutage", closedGranted);
                evidence.put("closedRefusedClusterUnavailable", closed.unavailable.get());
                evidence.put("leaderBackAfterMs", leaderAt < 0 ? -1 : (leaderAt - restartedAt) / MILLI);
                evidence.put("firstNodeAnswerAfterRestartMs", recovered ? (recoveredAt - restartedAt) / MILLI : -1);
                evidence.put("grantedInFirstSecondBack", grantedFirstSecondBack + " (at most " + recoveryBound + ": 1.2x the rate)");
                evidence.put("degradedWindowAudited", audited);
                evidence.put("slowestCallMs", slowest / MILLI + " (deadline " + deadline.toMillis() + " ms; p99 " +
                    Math.max(open.callTime.getValueAtPercentile(99), closed.callTime.getValueAtPercentile(99)) / MILLI + " ms)");
                evidence.put("failedCalls", open.failed.get() + closed.failed.get());
                final boolean passed = recovered && openLocal > 0 && openLocal <= emergencyBound &&
                    closedGranted == 0 && closed.localAllowed.get() == 0 && closed.unavailable.get() > 0 &&
                    grantedFirstSecondBack <= recoveryBound && audited && slowest <= (deadline.toMillis() + 50) * MILLI &&
                    open.failed.get() + closed.failed.get() == 0;
                evidence.put("expected", "fail-open grants within the emergency budget, fail-closed calls all refused, every call " +
                    "ended within its deadline + 50 ms, the nodes back, the degraded window audited, at most 1.2x the rate in the " +
                    "first second back");
                return new DrillVerdict("store-failure", passed, evidence);
            }
        }
        finally
        {
            drills.delete(api, openId);
            drills.delete(api, closedId);
        }
    }

    /** Whether the audit log holds an SDK's degraded window since {@code since} that names {@code policyId}. */
    private boolean degradedWindowAudited(final Instant since, final String policyId, final long withinNanos)
    {
        final long end = System.nanoTime() + withinNanos;
        while (System.nanoTime() < end)
        {
            try
            {
                final AuditPage page = api.call("GET", "/v1/audit?since=" + AdminClient.encode(since.toString()), null,
                    AuditPage.getDefaultInstance());
                for (final AuditRecord record : page.getRecordsList())
                {
                    if (record.getAction().equals("SDK_DEGRADED_WINDOW") && record.getDetail().contains(policyId))
                    {
                        return true;
                    }
                }
            }
            catch (final AdminClient.Failure e)
            {
                // the cluster is still electing: ask again
            }
            LockSupport.parkNanos(200 * MILLI);
        }
        return false;
    }

    // ---------------------------------------------------------------- nodes

    /** What a node's STATUS says of it; {@code electionTimeoutMs} is -1 from a node that does not report it. */
    record Status(String id, String address, long pid, String role, String leaderAddress, long appliedIndex, long electionTimeoutMs)
    {
    }

    /** The node's STATUS, or null when it does not answer within a second. */
    static Status status(final String server)
    {
        try
        {
            final BlockingRequest.Answer answer = BlockingRequest.send(server, MessageType.STATUS, new byte[0], 1000);
            if (answer.type() != MessageType.STATUS_RESULT)
            {
                return null;
            }
            final StatusReport status = StatusJson.parse(answer.text());
            return new Status(status.getId(), status.getAddress(), Integer.toUnsignedLong(status.getPid()),
                status.getRole(), status.getLeaderAddress(), status.hasAppliedIndex() ? status.getAppliedIndex() : -1,
                status.hasElectionTimeoutMs() ? Integer.toUnsignedLong(status.getElectionTimeoutMs()) : -1);
        }
        catch (final IOException | RuntimeException e)
        {
            return null;
        }
    }

    /**
     * The node's status, asked again every 100 ms for up to {@code timeoutNanos} (one answer can miss
     * its 1 s on a busy host); null if it never answered.
     */
    static Status statusWithin(final String server, final long timeoutNanos)
    {
        final long end = System.nanoTime() + timeoutNanos;
        Status status = status(server);
        while (status == null && System.nanoTime() < end)
        {
            LockSupport.parkNanos(100 * MILLI);
            status = status(server);
        }
        return status;
    }

    /** The node that leads (the control group, which with one group is every shard's). */
    private Status leader() throws AdminClient.Failure
    {
        final long end = System.nanoTime() + 10 * SECOND;
        while (System.nanoTime() < end)
        {
            for (final String server : servers)
            {
                final Status node = status(server);
                if (node != null && node.role().equals("LEADER") && node.pid() > 0)
                {
                    return node;
                }
            }
            LockSupport.parkNanos(100 * MILLI);
        }
        throw AdminClient.failed("no node of " + servers + " says it leads: is the cluster electing? (./limiter status)");
    }

    private String leaderOrNone()
    {
        for (final String server : servers)
        {
            final Status node = status(server);
            if (node != null && node.role().equals("LEADER"))
            {
                return node.id() + " at " + node.address();
            }
        }
        return "none";
    }

    /** Waits until some node leads: when it did, or -1. */
    private long awaitLeader(final long deadline)
    {
        while (System.nanoTime() < deadline)
        {
            for (final String server : servers)
            {
                final Status node = status(server);
                if (node != null && node.role().equals("LEADER"))
                {
                    return System.nanoTime();
                }
            }
            LockSupport.parkNanos(100 * MILLI);
        }
        return -1;
    }

    /**
     * Waits until the restarted node at {@code address} follows a leader and has applied what that
     * leader had applied when it was first seen: when it had, or -1.
     */
    private long awaitRejoined(final String address, final long deadline)
    {
        long target = -1;
        while (System.nanoTime() < deadline)
        {
            final Status node = status(address);
            if (node != null && !node.leaderAddress().isEmpty() && !node.leaderAddress().equals("null"))
            {
                if (target < 0)
                {
                    final Status leader = node.leaderAddress().equals(address) ? node : status(node.leaderAddress());
                    target = leader == null ? -1 : leader.appliedIndex();
                }
                if (target >= 0 && node.appliedIndex() >= target)
                {
                    return System.nanoTime();
                }
            }
            LockSupport.parkNanos(100 * MILLI);
        }
        return -1;
    }

    // ---------------------------------------------------------------- helpers

    private LimiterClient client(final Duration deadline)
    {
        return LimiterClient.builder().endpoints(servers.toArray(String[]::new)).deadline(deadline).build();
    }

    /** Runs the traffic on a thread of its own (not the common pool, which a small machine may not have). */
    private static CompletableFuture<Long> traffic(final LongSupplier drive)
    {
        final CompletableFuture<Long> done = new CompletableFuture<>();
        final Thread thread = new Thread(() ->
        {
            try
            {
                done.complete(drive.getAsLong());
            }
            catch (final RuntimeException e)
            {
                done.completeExceptionally(e);
            }
        }, "drill-traffic");
        thread.setDaemon(true);
        thread.start();
        return done;
    }

    private static void sleep(final long nanos)
    {
        final long end = System.nanoTime() + nanos;
        long left;
        while ((left = end - System.nanoTime()) > 0)
        {
            LockSupport.parkNanos(left);
        }
    }

    private static void joinQuietly(final Thread thread, final long nanos)
    {
        try
        {
            thread.join(nanos / MILLI);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    private static String seconds(final long nanos)
    {
        return String.format(Locale.ROOT, "%.2f", nanos / 1e9);
    }
}
