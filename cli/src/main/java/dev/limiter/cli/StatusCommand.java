package dev.limiter.cli;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.limiter.protocol.HostPort;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.status.GroupStatus;
import dev.limiter.protocol.status.PeerRegion;
import dev.limiter.protocol.status.RegionShare;
import dev.limiter.protocol.status.RegionStatus;
import dev.limiter.protocol.status.StatusReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import javax.net.ssl.SSLContext;

/** {@code ./limiter status}: members, leaders of every Raft group, terms, applied indexes and lag, from every member. */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    description = {
        "Asks a node (and through it every member it knows) how the cluster stands: members, role per",
        "shard, the groups each member leads, leader, term, applied index and lag behind the most advanced",
        "member (of any Raft group). With several Raft groups (--raft-groups) it also lists each group's",
        "leader and shards, and how many groups each member leads.",
        "--json prints one JSON object: {\"members\":[{\"id\":..,\"address\":..,\"role\":..,\"groups\":[..],",
        "\"shards\":[..],...}],\"groups\":[{\"group\":..,\"leader\":..,\"shards\":[..]}],\"electionTimeoutsAgree\":..,",
        "\"leadersPerNode\":{..}}. It warns when the members run different --election-timeout-ms.",
        "With TLS on the data ports: --tls-ca (and --tls-cert/--tls-key under mutual TLS).",
        "Exit status: 0 when every member answered, 1 otherwise, 2 for bad options."},
    sortOptions = false)
public final class StatusCommand implements Callable<Integer>
{
    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT", description = "Node(s) to ask (default: 127.0.0.1:7401).")
    List<String> servers = List.of("127.0.0.1:7401");

    @Option(names = "--json", description = "Print one JSON object instead of a table.")
    boolean json;

    @Option(names = "--timeout-ms", description = "Per-node timeout (default: ${DEFAULT-VALUE}).")
    int timeoutMs = 2000;

    @CommandLine.Mixin
    TlsOptions tls = new TlsOptions();

    private SSLContext context;

    /**
     * One member's answer to STATUS: its document as it came (for --json, which passes on every field,
     * those of a newer node too) and as read, or why there is none.
     */
    private record Answer(String json, StatusReport status, String error)
    {
        static Answer failed(final String error)
        {
            return new Answer(null, null, error);
        }

        boolean answered()
        {
            return status != null;
        }
    }

    /** The shards of a group as "0,3". */
    private static String shards(final GroupStatus group)
    {
        return group.getShardsList().stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    @Override
    public Integer call()
    {
        try
        {
            context = tls.requested() ? tls.context() : null;
        }
        catch (final AdminClient.Failure e)
        {
            System.err.println("limiter status: " + e.getMessage());
            return e.exitStatus;
        }
        for (final String server : servers)
        {
            try
            {
                HostPort.parse(server, "--server");
            }
            catch (final IllegalArgumentException e)
            {
                System.err.println("limiter status: " + e.getMessage());
                return 2; // bad input, as for every other command
            }
        }
        final Set<String> addresses = new LinkedHashSet<>(servers);
        for (final String server : servers)
        {
            final Answer answer = ask(server);
            if (answer.answered())
            {
                answer.status().getMembersList().forEach(member -> addresses.add(member.getAddress()));
                break;
            }
        }
        final List<Answer> answers = new ArrayList<>();
        boolean allAnswered = true;
        // The most advanced member's applied index, per Raft group: lag is measured against it.
        final Map<Integer, Long> maxApplied = new TreeMap<>();
        // Each group's leader and shards, as its leader (else any member) reports them.
        final Map<Integer, GroupStatus> groupLeaders = new TreeMap<>();
        for (final String address : addresses)
        {
            final Answer answer = ask(address);
            answers.add(answer);
            allAnswered &= answer.answered();
            for (final GroupStatus group : groups(answer))
            {
                maxApplied.merge(group.getGroup(), group.getAppliedIndex(), Math::max);
                if (!groupLeaders.containsKey(group.getGroup()) || "LEADER".equals(group.getRole()))
                {
                    groupLeaders.put(group.getGroup(), group);
                }
            }
        }
        final Map<String, Integer> leadersPerNode = new TreeMap<>();
        for (final Answer answer : answers)
        {
            if (answer.answered() && answer.status().getGroupsCount() > 0)
            {
                leadersPerNode.put(answer.status().getId(), 0);
            }
        }
        groupLeaders.values().forEach(g -> leadersPerNode.merge(g.getLeader(), 1, Integer::sum));
        leadersPerNode.remove(""); // a group electing has no leader
        final String timeoutsDiffer =
            electionTimeoutsDiffer(answers.stream().filter(Answer::answered).map(Answer::status).toList());
        if (json)
        {
            printJson(addresses, answers, maxApplied, groupLeaders, leadersPerNode, timeoutsDiffer == null);
        }
        else
        {
            System.out.printf(Locale.ROOT, "%-8s %-22s %-16s %-8s %-8s %-6s %-12s %-6s %s%n", "ID", "ADDRESS", "ROLE", "LEADS", "LEADER",
                "TERM", "APPLIED", "LAG", "BUCKETS(by shard)");
            int i = 0;
            for (final String address : addresses)
            {
                final Answer answer = answers.get(i++);
                if (!answer.answered())
                {
                    System.out.printf(Locale.ROOT, "%-8s %-22s %-16s %s%n", "?", address, "UNREACHABLE",
                        answer.error());
                    continue;
                }
                final StatusReport status = answer.status();
                final String leads = status.getGroupsList().stream().filter(g -> "LEADER".equals(g.getRole()))
                    .map(g -> String.valueOf(g.getGroup())).reduce((a, b) -> a + "," + b)
                    .orElse(status.getGroupsCount() > 0 ? "-" : "all");
                final String leader = status.getLeader().isEmpty() ? "-" : status.getLeader();
                System.out.printf(Locale.ROOT, "%-8s %-22s %-16s %-8s %-8s %-6s %-12s %-6s %s%n", status.getId(),
                    address, status.getRole(), leads, leader, status.hasTerm() ? status.getTerm() : "-",
                    status.hasAppliedIndex() ? status.getAppliedIndex() : "-",
                    status.hasAppliedIndex() ? lag(answer, maxApplied) : "-",
                    status.getShardsList().stream().map(shard -> String.valueOf(shard.getBuckets()))
                        .collect(Collectors.joining("/")));
            }
            if (groupLeaders.size() > 1)
            {
                System.out.printf(Locale.ROOT, "%n%-6s %-8s %s%n", "GROUP", "LEADER", "SHARDS");
                groupLeaders.values().forEach(g ->
                    System.out.printf(Locale.ROOT, "%-6d %-8s %s%n", g.getGroup(), g.getLeader(), shards(g)));
                final StringBuilder spread = new StringBuilder("groups led per node:");
                leadersPerNode.forEach((node, led) -> spread.append(' ').append(node).append('=').append(led));
                System.out.println(spread);
            }
            printRegion(answers);
            if (timeoutsDiffer != null)
            {
                System.out.println();
                System.out.println(timeoutsDiffer);
            }
            final String versions = versions(answers.stream().filter(Answer::answered).map(Answer::status).toList());
            System.out.println();
            System.out.println(versions);
        }
        return allAnswered ? 0 : 1;
    }

    /** A node's default {@code --election-timeout-ms}, and what every build from before the option ran. */
    static final long DEFAULT_ELECTION_TIMEOUT_MILLIS = 150;

    /**
     * A warning when the members that answered run different {@code --election-timeout-ms}, else
     * null: a leader decides alone for its own value less 25 ms after a majority last answered,
     * which is safe only if no member may campaign sooner.
     */
    static String electionTimeoutsDiffer(final List<StatusReport> answers)
    {
        final Map<String, Long> byMember = new TreeMap<>();
        for (final StatusReport answer : answers)
        {
            if (answer.getClustered())
            {
                // A member of a build from before the option does not report it: it runs 150 ms.
                byMember.put(answer.getId(), answer.hasElectionTimeoutMs() ?
                    Integer.toUnsignedLong(answer.getElectionTimeoutMs()) : DEFAULT_ELECTION_TIMEOUT_MILLIS);
            }
        }
        if (byMember.values().stream().distinct().count() <= 1)
        {
            return null;
        }
        final StringBuilder members = new StringBuilder();
        byMember.forEach((id, millis) -> members.append(members.length() == 0 ? "" : ", ").append(id).append('=').append(millis).append(" ms"));
        return "WARNING: the members run different --election-timeout-ms (" + members + "). A leader decides alone for its own value " +
            "less 25 ms after a majority last answered, so a member with a shorter one may be elected while a cut-off leader still " +
            "decides: restart the members with the same value (docs/operations.md).";
    }

    /**
     * The builds the members that answered run: {@code version 0.1.0 (commit 1a2b3c4d5e6f)} when they
     * agree, else each member's and a note that an upgrade is under way. A member of a build from
     * before versions reports none.
     */
    static String versions(final List<StatusReport> answers)
    {
        final Map<String, String> byMember = new TreeMap<>();
        for (final StatusReport answer : answers)
        {
            byMember.put(answer.getId(), answer.getVersion().isEmpty() ? "a build from before versions" :
                answer.getVersion() + " (commit " + answer.getCommit() + ", protocol generation " +
                    answer.getProtocolGeneration() + ")");
        }
        if (byMember.values().stream().distinct().count() <= 1)
        {
            return "version " + byMember.values().stream().findFirst().orElse("unknown");
        }
        final StringBuilder members = new StringBuilder();
        byMember.forEach((id, build) -> members.append("\n  ").append(id).append(": ").append(build));
        return "NOTE: the members run different builds (a rolling upgrade under way?); finish it so every member runs one:" +
            members;
    }

    /** The region the nodes belong to (docs/regions.md): its shares as its leader has them, and how old each other region's report is. */
    private static void printRegion(final List<Answer> answers)
    {
        RegionStatus region = null;
        String from = null;
        for (final Answer answer : answers)
        {
            final boolean hasRegion = answer.answered() && answer.status().hasRegion();
            if (hasRegion && (region == null || answer.status().getRegion().getLeads()))
            {
                region = answer.status().getRegion();
                from = answer.status().getId();
            }
        }
        if (region == null)
        {
            return;
        }
        System.out.printf(Locale.ROOT, "%nREGION %s (shares as %s has them; a region may raise its shares every %d ms x regions)%n",
            region.getName(), from, Integer.toUnsignedLong(region.getSlotMs()));
        System.out.printf(Locale.ROOT, "%-24s %-8s %s%n", "REGIONAL POLICY", "SHARE", "DEMAND/S (this node)");
        for (final RegionShare share : region.getSharesList())
        {
            System.out.printf(Locale.ROOT, "%-24s %-8.4f %.1f%n", share.getPolicy(), share.getShare(),
                share.getDemandPerSecond());
        }
        for (final PeerRegion peer : region.getRegionsList())
        {
            final long age = peer.getReportAgeMs();
            System.out.println("other region " + peer.getRegion() + ": " +
                (age < 0 ? "never heard from" : "last report " + age + " ms ago"));
        }
    }

    /**
     * {@code --json}: every member's status document as it answered it (with its lag), or why it did
     * not; each group's leader and shards; whether the election timeouts agree; groups led per node.
     */
    private static void printJson(final Set<String> addresses, final List<Answer> answers,
        final Map<Integer, Long> maxApplied, final Map<Integer, GroupStatus> groupLeaders,
        final Map<String, Integer> leadersPerNode, final boolean timeoutsAgree)
    {
        final JsonArray members = new JsonArray();
        int i = 0;
        for (final String address : addresses)
        {
            final Answer answer = answers.get(i++);
            final JsonObject member;
            if (answer.answered())
            {
                member = JsonParser.parseString(answer.json()).getAsJsonObject();
                member.addProperty("lag", lag(answer, maxApplied));
            }
            else
            {
                member = new JsonObject();
                member.addProperty("address", address);
                member.addProperty("role", "UNREACHABLE");
                member.addProperty("error", answer.error());
            }
            members.add(member);
        }
        final JsonArray groups = new JsonArray();
        for (final GroupStatus group : groupLeaders.values())
        {
            final JsonObject view = new JsonObject();
            view.addProperty("group", group.getGroup());
            view.addProperty("leader", group.getLeader());
            final JsonArray shards = new JsonArray();
            group.getShardsList().forEach(shards::add);
            view.add("shards", shards);
            groups.add(view);
        }
        final JsonObject led = new JsonObject();
        leadersPerNode.forEach(led::addProperty);
        final JsonObject out = new JsonObject();
        out.add("members", members);
        out.add("groups", groups);
        out.addProperty("electionTimeoutsAgree", timeoutsAgree);
        out.add("leadersPerNode", led);
        System.out.println(new GsonBuilder().disableHtmlEscaping().create().toJson(out));
    }

    private Answer ask(final String hostPort)
    {
        try
        {
            final BlockingRequest.Answer answer =
                BlockingRequest.send(hostPort, MessageType.STATUS, new byte[0], timeoutMs, context);
            if (answer.type() != MessageType.STATUS_RESULT)
            {
                return Answer.failed("unexpected answer " + MessageType.name(answer.type()));
            }
            final String json = answer.text();
            return new Answer(json, StatusJson.parse(json), null);
        }
        catch (final IOException | IllegalArgumentException e)
        {
            return Answer.failed(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /** The Raft groups a member reported (none when it did not answer, or is not a member of a cluster). */
    private static List<GroupStatus> groups(final Answer answer)
    {
        return answer.answered() ? answer.status().getGroupsList() : List.of();
    }

    /** How far this member is behind the most advanced one, in log entries, in the group where it is furthest. */
    private static long lag(final Answer answer, final Map<Integer, Long> maxApplied)
    {
        long lag = 0;
        for (final GroupStatus group : groups(answer))
        {
            final long most = maxApplied.getOrDefault(group.getGroup(), group.getAppliedIndex());
            lag = Math.max(lag, most - group.getAppliedIndex());
        }
        return lag;
    }

    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new StatusCommand()).execute(args));
    }
}
