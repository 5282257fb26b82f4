package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.status.StatusReport;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.DecisionProbes;
import dev.limiter.server.testing.DrillCallers;
import dev.limiter.server.testing.LinkProxy;
import dev.limiter.server.testing.NetworkNamespaces;
import dev.limiter.server.testing.RawConnection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Partition drills across hosts: three store nodes, each a JVM in a network namespace of its own
 * with its own address on a bridge, and the SDK in this JVM on the same bridge. The faults are
 * iptables rules inside the namespaces ({@link NetworkNamespaces#dropInbound}): the leader cut off
 * from the majority both ways, the leader that can send but not receive, and cuts of the leader
 * that flap; and slow, lossy links between the members: every Raft connection passes through a
 * {@link LinkProxy} in its receiver's namespace (an iptables REDIRECT), which a drill slows.
 * Every drill checks, from what the nodes decided (never the SDK's own local answers):
 * <ul>
 * <li>STRICT over-admission 0: a STRICT bucket (20/s, burst 20) granted at most burst + rate x
 * the drill's time;</li>
 * <li>FAST within its published bound (docs/cluster.md): a FAST bucket (20/s, burst 20) granted at
 * most that plus one burst and rate x 1 s for each failover (each new term, or each cut when
 * there were more cuts);</li>
 * <li>no committed decision lost: every grant of a STRICT ledger bucket (100,000 tokens, one more an hour: no
 * refill to speak of) is still charged in the bucket once the cut heals, and the three replicas
 * agree (same applied index, same digest of their tables);</li>
 * <li>a cut-off leader stops deciding within its leader lease ({@link RaftNodeConfig#leaderLeaseMillis()},
 * 125 ms by default, plus 100 ms for this shared machine): no probe sent to it later is decided;</li>
 * <li>the majority decides again within 1 s of the cut (of the last heal, after flapping), and no
 * drill goes 1 s without any node deciding;</li>
 * <li>callers' deadlines hold: no SDK call returns later than its deadline + 100 ms.</li>
 * </ul>
 * Needs root, iproute2 and iptables; skipped with the reason otherwise, unless {@code
 * LIMITER_REQUIRE_NETNS=1} (CI's {@code .ci/run}) makes their absence a failure. The namespaces,
 * veths, bridge and rules are removed after the drills, whether they pass or not, and any left
 * behind by a killed earlier run before they start.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(60)
class NetworkPartitionDrillTest
{
    private static final int DATA_PORT = 7400;
    /** A member's Raft port: its data port + the default --raft-port-offset. */
    private static final int RAFT_PORT = DATA_PORT + 100;
    /** Where each member's {@link LinkProxy} listens, in front of its Raft port, for the other members' connections. */
    private static final int PROXY_PORT = 7700;
    private static final int MEMBERS = 3;
    private static final long STRICT_RATE = 20;
    private static final long STRICT_BURST = 20;
    private static final long LEDGER_BURST = 100_000;
    private static final long FAST_RATE = 20;
    private static final long FAST_BURST = 20;
    /** The callers' keys, by their index in {@link DrillCallers.Call#key()}. */
    private static final int STRICT_KEY = 0;
    private static final int LEDGER_KEY = 1;
    private static final int FAST_KEY = 2;
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        "{\"id\":\"strict-drill\",\"selector\":{\"route\":\"/strict\"},\"rate\":" + STRICT_RATE +
        ",\"period\":\"1s\",\"burst\":" + STRICT_BURST +
        ",\"scope\":\"TENANT\",\"consistency\":\"STRICT\",\"owner\":\"drill\"}," +
        "{\"id\":\"ledger\",\"selector\":{\"route\":\"/ledger\"},\"rate\":1,\"period\":\"3600s\",\"burst\":" +
        LEDGER_BURST + ",\"scope\":\"TENANT\",\"consistency\":\"STRICT\",\"owner\":\"drill\"}," +
        "{\"id\":\"fast-drill\",\"selector\":{\"route\":\"/fast\"},\"rate\":" + FAST_RATE +
        ",\"period\":\"1s\",\"burst\":" + FAST_BURST + ",\"scope\":\"TENANT\",\"owner\":\"drill\"}," +
        "{\"id\":\"probe\",\"selector\":{\"route\":\"/probe\"},\"rate\":1000000,\"period\":\"1s\",\"burst\":1000000," +
        "\"scope\":\"TENANT\",\"owner\":\"drill\"}]," +
        "\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"burst\":2,\"owner\":\"drill\"}}";
    private static final Duration DEADLINE = Duration.ofMillis(250);
    private static final long DEADLINE_SLACK_MILLIS = 100;
    private static final long LEASE_MILLIS = new RaftNodeConfig().leaderLeaseMillis();
    private static final long LEASE_SLACK_MILLIS = 100;
    private static final long MAJORITY_DECIDES_WITHIN_MILLIS = 1000;
    /** The longest a drill may go with no node deciding at all. */
    private static final long LONGEST_SILENCE_MILLIS = 1000;

    /** Kept when a drill fails: each node's log and its link proxy's are in n1/, n2/ and n3/ (node.log, proxy.log). */
    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    static Path dir;

    /** Why the drills cannot run here (no root, iproute2 or iptables), or null. */
    private String unavailable;
    private NetworkNamespaces net;
    private final Map<Integer, Process> nodes = new LinkedHashMap<>();
    private final Map<Integer, Process> proxies = new LinkedHashMap<>();
    private final Map<Integer, String> addresses = new LinkedHashMap<>();
    private DecisionProbes probes;
    private LimiterClient client;

    /** A fault the drill made: {@code member} cut off ({@code how}) from {@code atNanos} until {@code healedNanos}. */
    private record Cut(int member, String how, long atNanos, long healedNanos)
    {
    }

    @BeforeAll
    void startTheClusterInNamespaces() throws Exception
    {
        final String noNamespaces = NetworkNamespaces.unavailableBecause();
        unavailable = noNamespaces != null ? noNamespaces : NetworkNamespaces.iptablesUnavailableBecause();
        if (unavailable != null && "1".equals(System.getenv("LIMITER_REQUIRE_NETNS")))
        {
            fail("LIMITER_REQUIRE_NETNS=1 but the partition drills cannot run: " + unavailable);
        }
        if (unavailable != null)
        {
            // Each drill is skipped with this reason (an assumption failed here would skip the class without it).
            System.out.println("partition drills skipped: " + unavailable);
            return;
        }
        NetworkNamespaces.removeStale();
        final long started = System.nanoTime();
        net = new NetworkNamespaces(MEMBERS);
        final Path policies = Files.writeString(dir.resolve("policies.json"), POLICIES);
        final StringBuilder peers = new StringBuilder();
        for (int m = 1; m <= MEMBERS; m++)
        {
            addresses.put(m, net.address(m));
            peers.append(m > 1 ? "," : "").append('n').append(m).append('=').append(net.address(m)).append(':')
                .append(DATA_PORT);
        }
        for (int m = 1; m <= MEMBERS; m++)
        {
            startProxy(m);
        }
        for (int m = 1; m <= MEMBERS; m++)
        {
            start(m, peers.toString(), policies);
        }
        probes = new DecisionProbes(addresses, DATA_PORT, "probe", "/probe");
        client = LimiterClient.builder()
            .endpoints(addresses.values().stream().map(a -> a + ":" + DATA_PORT).toArray(String[]::new))
            .deadline(DEADLINE).startupTimeout(Duration.ofSeconds(30))
            // The circuit probes every 50 ms (default 500 ms) and no ramp follows an outage (default 2 s): the drills
            // measure when the nodes decide again, not the SDK's pacing (docs/sdk.md gives both).
            .circuit(3, Duration.ofMillis(50)).recoveryRamp(Duration.ZERO).build();
        settle();
        System.out.printf("partition drills: 3 nodes in namespaces at %s, leader n%d, up after %.1f s%n",
            addresses.values(), leader(), (System.nanoTime() - started) / 1e9);
    }

    private void start(final int m, final String peers, final Path policies) throws IOException
    {
        final Path data = Files.createDirectories(dir.resolve("n" + m));
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final List<String> command = List.of(java, "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx256m",
            // Three JVMs and this one share the machine: C1 only and the serial collector leave cores for the drill.
            "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS", "-Dorg.slf4j.simpleLogger.log.dev.limiter=info",
            "-Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.RaftServer$Division=info",
            "-cp", System.getProperty("java.class.path"), "dev.limiter.server.ServerMain",
            "--node-id", "n" + m, "--peers", peers, "--host", net.address(m), "--port", Integer.toString(DATA_PORT),
            "--admin-port", "-1", "--data-dir", data.toString(), "--policies", policies.toString(),
            "--shards", "1", "--raft-groups", "1", "--io-threads", "1");
        nodes.put(m, new ProcessBuilder(net.inside(m, command)).redirectErrorStream(true)
            .redirectOutput(data.resolve("node.log").toFile()).start());
    }

    /**
     * Member {@code m}'s {@link LinkProxy}, in its namespace, in front of its Raft port: every Raft
     * connection another member opens to it passes through it (passing at once until a drill slows it).
     */
    private void startProxy(final int m) throws IOException, InterruptedException
    {
        final Path data = Files.createDirectories(dir.resolve("n" + m));
        final Path log = data.resolve("proxy.log");
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final List<String> command = List.of(java, "-Xmx32m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-cp", System.getProperty("java.class.path"), LinkProxy.class.getName(),
            net.address(m), Integer.toString(PROXY_PORT), net.address(m), Integer.toString(RAFT_PORT));
        proxies.put(m, new ProcessBuilder(net.inside(m, command)).redirectErrorStream(true)
            .redirectOutput(log.toFile()).start());
        Await.until("member " + m + "'s link proxy to listen", Duration.ofSeconds(20),
            () -> Files.exists(log) && readQuietly(log).contains("listening"), () -> readQuietly(log));
        net.redirectFromMembers(m, RAFT_PORT, PROXY_PORT);
    }

    private static String readQuietly(final Path file)
    {
        try
        {
            return Files.readString(file);
        }
        catch (final IOException e)
        {
            return "";
        }
    }

    /**
     * Every member's link proxy from now on: {@code delayMillis} one way, and {@code lossPerMille}
     * of the chunks held {@code stallMillis} more.
     */
    private void slowLinks(final long delayMillis, final int lossPerMille, final long stallMillis) throws IOException
    {
        for (final Process proxy : proxies.values())
        {
            proxy.getOutputStream().write(("set " + delayMillis + " " + lossPerMille + " " + stallMillis + "\n")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
            proxy.getOutputStream().flush();
        }
    }

    @AfterAll
    void stopEverything() throws Exception
    {
        try
        {
            if (client != null)
            {
                client.close();
            }
            if (probes != null)
            {
                probes.close();
            }
        }
        finally
        {
            nodes.values().forEach(Process::destroyForcibly);
            proxies.values().forEach(Process::destroyForcibly);
            for (final Process process : nodes.values())
            {
                process.waitFor(10, TimeUnit.SECONDS);
            }
            for (final Process process : proxies.values())
            {
                process.waitFor(10, TimeUnit.SECONDS);
            }
            if (net != null)
            {
                net.close(); // after the processes: a namespace lives on while a process is inside
            }
        }
    }

    @Test
    @Order(1)
    void aLeaderCutOffFromTheMajorityStopsDecidingWithinItsLeaseAndTheMajorityDecidesWithinASecond() throws Exception
    {
        drill("cut", () ->
        {
            final int leader = leader();
            final long at = cutBothWays(leader);
            // the cut lasts 2 s
            Thread.sleep(2000);
            final long healAt = System.nanoTime();
            net.clearDrops();
            return List.of(new Cut(leader, "cut off both ways", at, healAt));
        });
    }

    @Test
    @Order(2)
    void aLeaderThatCannotReceiveStopsDecidingWithinItsLeaseAndTheMajorityDecidesWithinASecond() throws Exception
    {
        drill("asymmetric", () ->
        {
            final int leader = leader();
            net.dropInbound(leader, others(leader));
            final long at = System.nanoTime();
            // the one-way drop lasts 2 s
            Thread.sleep(2000);
            final long healAt = System.nanoTime();
            net.clearDrops();
            return List.of(new Cut(leader, "receives nothing from the others (still sends)", at, healAt));
        });
    }

    @Test
    @Order(3)
    void cutsOfTheLeaderThatFlapEveryFewHundredMillisecondsNeverOverAdmitNorLoseACommittedDecision() throws Exception
    {
        drill("flapping", () ->
        {
            final List<Cut> cuts = new ArrayList<>();
            for (int flap = 0; flap < 5; flap++)
            {
                final int leader = probes.lastDecider();
                final long at = cutBothWays(leader);
                // each flap: 300 ms cut
                Thread.sleep(300);
                final long healAt = System.nanoTime();
                net.clearDrops();
                cuts.add(new Cut(leader, "cut off both ways (flap " + (flap + 1) + ")", at, healAt));
                // then 300 ms healed
                Thread.sleep(300);
            }
            return cuts;
        });
    }

    @Test
    @Order(4)
    void slowLossyLinksBetweenMembersNeverOverAdmitNorLoseACommittedDecisionAndNodesKeepDeciding() throws Exception
    {
        drill("lossy", () ->
        {
            try
            {
                // 10 ms each way (20 ms round trip: within the 25 ms the leader lease allows for), and 1 chunk in 100
                // held 200 ms more, as a lost segment is until TCP sends it again.
                slowLinks(10, 10, 200);
                // 3 s of traffic over the slow links
                Thread.sleep(3000);
                for (int m = 1; m <= MEMBERS; m++)
                {
                    final String log = readQuietly(dir.resolve("n" + m).resolve("proxy.log"));
                    assertTrue(log.contains("connection from") && log.contains("delay 10 ms"),
                        "n" + m + "'s Raft connections pass through its link proxy, slowed: its log says\n" + log);
                }
            }
            finally
            {
                slowLinks(0, 0, 0);
            }
            return List.of();
        });
    }

    /** The faults of one drill, made while the callers run; returns what it cut, and when. */
    @FunctionalInterface
    private interface Faults
    {
        List<Cut> make() throws Exception;
    }

    /**
     * One drill: callers ask for a fresh STRICT bucket, ledger bucket and FAST bucket (tenant {@code name})
     * for 0.5 s, the faults are made, the callers go on for 1 s after the last heal; then the cluster
     * settles and every verdict is checked. All verdicts are reported together.
     */
    private void drill(final String name, final Faults faults) throws Exception
    {
        Assumptions.assumeTrue(unavailable == null, () -> "partition drills skipped: " + unavailable);
        settle();
        final long termBefore = term();
        final Descriptor ledger = Descriptor.of(name, "/ledger");
        final long start = System.nanoTime();
        final List<Cut> cuts;
        final List<DrillCallers.Call> calls;
        final DrillCallers callers = new DrillCallers(client, 3,
            List.of(Descriptor.of(name, "/strict"), ledger, Descriptor.of(name, "/fast")));
        try
        {
            // the callers run before the fault
            Thread.sleep(500);
            try
            {
                cuts = faults.make();
            }
            finally
            {
                net.clearDrops(); // even when making a fault failed halfway
            }
            // and after the heal
            Thread.sleep(1000);
        }
        finally
        {
            calls = callers.stop();
        }
        final long end = System.nanoTime();
        final List<String> failures = new ArrayList<>();
        final StringBuilder report = new StringBuilder("drill " + name + ":");

        settle(); // so that term() is the term the drill ended in, and the replicas agree for the ledger below
        checkGrants(calls, start, end, Math.max(cuts.size(), term() - termBefore), failures, report);
        checkTimeline(cuts, start, end, failures, report);
        checkDeadlines(calls, failures, report);
        // No committed decision lost: every ledger grant is still charged once the cluster settled (above, every
        // replica at the same index with the same digest).
        final long ledgerGrants = grants(calls, LEDGER_KEY);
        final long charged = LEDGER_BURST - remainingAfterOneMore(ledger) - 1;
        report.append(" ledger granted ").append(ledgerGrants).append(", charged ").append(charged)
            .append(" after the heal");
        if (charged < ledgerGrants)
        {
            failures.add("committed decisions lost: nodes granted " + ledgerGrants +
                " ledger tokens, the ledger bucket holds " + charged + " charges after the heal");
        }
        System.out.println(report);
        assertTrue(failures.isEmpty(), "drill " + name + " failed: " + String.join("; ", failures) + "\n" + report +
            "\nnode logs in " + dir + logTails());
    }

    /**
     * STRICT over-admission 0, FAST within its published bound: what nodes granted of each bucket
     * over the drill ({@code failovers}: each new term, or each cut when there were more cuts).
     */
    private static void checkGrants(final List<DrillCallers.Call> calls, final long start, final long end,
        final long failovers, final List<String> failures, final StringBuilder report)
    {
        // STRICT over-admission 0: what nodes granted of the STRICT bucket against burst + rate x the drill's time.
        final long firstSent = calls.stream().mapToLong(DrillCallers.Call::sentNanos).min().orElse(start);
        final long lastReturned = calls.stream().mapToLong(DrillCallers.Call::returnedNanos).max().orElse(end);
        final double seconds = (lastReturned - firstSent) / 1e9;
        final long strictGrants = grants(calls, STRICT_KEY);
        final long strictBound = STRICT_BURST + (long)Math.ceil(STRICT_RATE * seconds);
        report.append(String.format(" STRICT granted %d of at most %d in %.2f s;", strictGrants, strictBound, seconds));
        if (strictGrants > strictBound)
        {
            failures.add("STRICT over-admission: nodes granted " + strictGrants + ", above burst + rate x time = " +
                strictBound);
        }

        // FAST within its published bound (docs/cluster.md): besides burst + rate x time, at most one burst and
        // rate x 1 s more for each failover (each new term, or each cut when there were more cuts).
        final long fastGrants = grants(calls, FAST_KEY);
        final long fastBound = FAST_BURST + (long)Math.ceil(FAST_RATE * seconds) + failovers * (FAST_BURST + FAST_RATE);
        report.append(String.format(" FAST granted %d of at most %d (%d failovers);", fastGrants, fastBound,
            failovers));
        if (fastGrants > fastBound)
        {
            failures.add("FAST over-admission beyond its published bound: nodes granted " + fastGrants + ", above " +
                fastBound + " (burst + rate x time + (burst + rate x 1 s) per failover)");
        }
    }

    /**
     * The nodes never went silent for long; each cut-off leader stopped within its lease and the
     * majority decided within 1 s (of the cut, or of the last heal when the cuts were shorter).
     */
    private void checkTimeline(final List<Cut> cuts, final long start, final long end, final List<String> failures,
        final StringBuilder report)
    {
        // The nodes never went silent for long: the longest time between two decided probes (any node).
        final long silence = longestSilenceMillis(probes.sentBetween(start, end));
        report.append(" longest time no node decided ").append(silence).append(" ms;");
        if (silence > LONGEST_SILENCE_MILLIS)
        {
            failures.add("no node decided for " + silence + " ms (at most " + LONGEST_SILENCE_MILLIS + " ms)");
        }

        // Cut-off leaders stop within their lease; the majority decides again within 1 s.
        for (final Cut cut : cuts)
        {
            checkCut(cut, failures, report);
        }
        final Cut last = cuts.isEmpty() ? null : cuts.get(cuts.size() - 1);
        if (last != null &&
            last.healedNanos() - last.atNanos() < TimeUnit.MILLISECONDS.toNanos(MAJORITY_DECIDES_WITHIN_MILLIS))
        {
            final long firstAfterHeal =
                firstDecision(probes.sentBetween(last.healedNanos(), end), 0, last.healedNanos());
            report.append(firstAfterHeal < 0 ? " no node decided after the last heal;" :
                " a node decided " + firstAfterHeal + " ms after the last heal;");
            if (firstAfterHeal < 0 || firstAfterHeal > MAJORITY_DECIDES_WITHIN_MILLIS)
            {
                failures.add("no node decided within " + MAJORITY_DECIDES_WITHIN_MILLIS + " ms of the last heal" +
                    (firstAfterHeal < 0 ? "" : " (" + firstAfterHeal + " ms)"));
            }
        }
    }

    /** Callers' deadlines hold: no call returned later than its deadline + the slack. */
    private static void checkDeadlines(final List<DrillCallers.Call> calls, final List<String> failures,
        final StringBuilder report)
    {
        final long late = calls.stream().filter(c -> c.millis() > DEADLINE.toMillis() + DEADLINE_SLACK_MILLIS).count();
        final long slowest = calls.stream().mapToLong(DrillCallers.Call::millis).max().orElse(0);
        final long byNodes = calls.stream().filter(DrillCallers.Call::nodeDecided).count();
        // A STRICT grant waits for its commit (a refusal need not): their times show how slow the links between
        // the members were.
        final long[] strictMillis = calls.stream().filter(c -> c.key() == STRICT_KEY && c.nodeDecided() && c.allowed())
            .mapToLong(DrillCallers.Call::millis).sorted().toArray();
        report.append(String.format(
            " %d calls (%d decided by nodes, STRICT grants in %d ms at the median), slowest %d ms (deadline %d ms);",
            calls.size(), byNodes, strictMillis.length == 0 ? -1 : strictMillis[strictMillis.length / 2], slowest,
            DEADLINE.toMillis()));
        if (late > 0)
        {
            failures.add(late + " calls returned later than the deadline + " + DEADLINE_SLACK_MILLIS + " ms (slowest " +
                slowest + " ms)");
        }
    }

    /** The longest time between the answers of two decided probes in {@code probes}, in milliseconds. */
    private static long longestSilenceMillis(final List<DecisionProbes.Probe> probes)
    {
        final long[] decided = probes.stream().filter(DecisionProbes.Probe::decided)
            .mapToLong(DecisionProbes.Probe::answeredNanos).sorted().toArray();
        long longest = 0;
        for (int i = 1; i < decided.length; i++)
        {
            longest = Math.max(longest, decided[i] - decided[i - 1]);
        }
        return decided.length == 0 ? Long.MAX_VALUE : longest / 1_000_000;
    }

    /** The leader's term (the cluster settled). */
    private long term()
    {
        final StatusReport status = status(leader());
        if (status == null)
        {
            throw new AssertionError("the leader did not answer STATUS: " + statuses());
        }
        return status.getTerm();
    }

    /** The grants nodes made for key {@code key}. */
    private static long grants(final List<DrillCallers.Call> calls, final int key)
    {
        return calls.stream().filter(c -> c.key() == key && c.nodeDecided() && c.allowed()).count();
    }

    /** The verdicts of one cut: its member stopped deciding within its lease, and the others decided within 1 s. */
    private void checkCut(final Cut cut, final List<String> failures, final StringBuilder report)
    {
        final List<DecisionProbes.Probe> during = probes.sentBetween(cut.atNanos(), cut.healedNanos());
        final long leaseEnds = cut.atNanos() + TimeUnit.MILLISECONDS.toNanos(LEASE_MILLIS + LEASE_SLACK_MILLIS);
        final long decidedLate = during.stream().filter(p -> p.member() == cut.member() && p.decided() &&
            p.sentNanos() - leaseEnds > 0).count();
        final long lastDecided = during.stream().filter(p -> p.member() == cut.member() && p.decided())
            .mapToLong(p -> (p.answeredNanos() - cut.atNanos()) / 1_000_000).max().orElse(-1);
        report.append(" n").append(cut.member()).append(' ').append(cut.how()).append(": its last decision ")
            .append(lastDecided < 0 ? "before the cut" : lastDecided + " ms after it");
        if (decidedLate > 0)
        {
            failures.add("n" + cut.member() + " (" + cut.how() + ") decided " + decidedLate +
                " probes sent later than its lease (" + LEASE_MILLIS + " ms) + " + LEASE_SLACK_MILLIS +
                " ms after the cut; its last decision came " + lastDecided + " ms after the cut");
        }
        if (cut.healedNanos() - cut.atNanos() >= TimeUnit.MILLISECONDS.toNanos(MAJORITY_DECIDES_WITHIN_MILLIS))
        {
            final long majority = firstDecision(during, cut.member(), cut.atNanos());
            report.append(", the majority decided ").append(majority < 0 ? "never" : majority + " ms after the cut");
            if (majority < 0 || majority > MAJORITY_DECIDES_WITHIN_MILLIS)
            {
                failures.add("the majority (without n" + cut.member() + ") did not decide within " +
                    MAJORITY_DECIDES_WITHIN_MILLIS + " ms of the cut" + (majority < 0 ? "" : " (" + majority + " ms)"));
            }
        }
        report.append(';');
    }

    /**
     * Milliseconds from {@code fromNanos} to the first answer of a decided probe to a member other
     * than {@code except}; -1 if none.
     */
    private static long firstDecision(final List<DecisionProbes.Probe> probes, final int except, final long fromNanos)
    {
        return probes.stream().filter(p -> p.decided() && p.member() != except)
            .mapToLong(p -> (p.answeredNanos() - fromNanos) / 1_000_000).min().orElse(-1);
    }

    /** The ledger bucket's tokens left after one more grant, which a node must decide (within 10 s). */
    private long remainingAfterOneMore(final Descriptor ledger) throws InterruptedException
    {
        final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() - end < 0)
        {
            try
            {
                final Decision decision = client.acquireBlocking(ledger, 1);
                if (!decision.degraded() && decision.allowed())
                {
                    return decision.remaining();
                }
            }
            catch (final LimiterException e)
            {
                // no node answered in time: again
            }
            // paced retries of a measurement: Await backs off to 50 ms, too coarse here
            Thread.sleep(20);
        }
        throw new AssertionError("no node granted the ledger's last token within 10 s of the heal" + logTails());
    }

    /**
     * Waits (at most 20 s), the probes paused, until one member leads and every replica has applied
     * the same index with the same digest of its tables.
     */
    private void settle() throws InterruptedException
    {
        probes.pause(); // a probe decided now is a log entry that one replica may have applied and another not yet
        try
        {
            awaitSettled();
        }
        finally
        {
            probes.resume();
        }
    }

    private void awaitSettled() throws InterruptedException
    {
        Await.until(() -> "one leader and three replicas at the same index with the same digest: " + statuses(),
            Duration.ofSeconds(20), () ->
            {
                final List<StatusReport> reports = new ArrayList<>();
                for (int m = 1; m <= MEMBERS; m++)
                {
                    final StatusReport status = status(m);
                    if (status == null)
                    {
                        return false;
                    }
                    reports.add(status);
                }
                final long leaders = reports.stream().filter(r -> "LEADER".equals(r.getRole())).count();
                final long indexes = reports.stream().mapToLong(StatusReport::getAppliedIndex).distinct().count();
                final long digests = reports.stream().mapToLong(StatusReport::getDigest).distinct().count();
                return leaders == 1 && indexes == 1 && digests == 1;
            }, this::logTails);
    }

    /** The member whose STATUS says it leads (the drill settled the cluster before it began). */
    private int leader()
    {
        for (int m = 1; m <= MEMBERS; m++)
        {
            final StatusReport status = status(m);
            if (status != null && "LEADER".equals(status.getRole()))
            {
                return m;
            }
        }
        throw new AssertionError("no leader right after the cluster settled: " + statuses());
    }

    private static int[] others(final int member)
    {
        final int[] others = new int[MEMBERS - 1];
        int i = 0;
        for (int m = 1; m <= MEMBERS; m++)
        {
            if (m != member)
            {
                others[i++] = m;
            }
        }
        return others;
    }

    /**
     * Cuts {@code member} off from the others, both ways: it drops what they send, then they drop
     * what it sends. Returns when it stopped hearing from them (its own rule was in place), from
     * which its lease runs out; the others stop hearing from it a few milliseconds later.
     */
    private long cutBothWays(final int member) throws IOException
    {
        final int[] others = others(member);
        net.dropInbound(member, others);
        final long at = System.nanoTime();
        for (final int other : others)
        {
            net.dropInbound(other, member);
        }
        return at;
    }

    /** Member {@code m}'s STATUS answer, or null when it does not answer within a second. */
    private StatusReport status(final int m)
    {
        try (RawConnection raw = new RawConnection(addresses.get(m), DATA_PORT))
        {
            raw.timeout(1000);
            final RawConnection.Answer answer = raw.request(MessageType.STATUS, 1, new byte[0]);
            return answer == null || answer.isError() ? null : StatusJson.parse(answer.text());
        }
        catch (final IOException e)
        {
            return null;
        }
    }

    private String statuses()
    {
        final StringBuilder all = new StringBuilder();
        for (int m = 1; m <= MEMBERS; m++)
        {
            final StatusReport status = status(m);
            all.append(" n").append(m).append(status == null ? " silent" : " " + status.getRole() + " term " +
                status.getTerm() + " applied " + status.getAppliedIndex() + " digest " + status.getDigest());
        }
        return all.toString();
    }

    /** Each node's state and the last lines of its node.log, for a failure message. */
    private String logTails()
    {
        final StringBuilder tails = new StringBuilder();
        for (final Map.Entry<Integer, Process> node : nodes.entrySet())
        {
            final Process process = node.getValue();
            tails.append("\n--- n").append(node.getKey())
                .append(process.isAlive() ? " (running)" : " (exited " + process.exitValue() + ")")
                .append(", last lines of its node.log:");
            try
            {
                final List<String> lines = Files.readAllLines(dir.resolve("n" + node.getKey()).resolve("node.log"));
                lines.subList(Math.max(0, lines.size() - 15), lines.size())
                    .forEach(line -> tails.append("\n").append(line));
            }
            catch (final IOException | RuntimeException e)
            {
                tails.append(" unreadable: ").append(e);
            }
        }
        return tails.toString();
    }
}
