package dev.limiter.cli;

import dev.limiter.protocol.HostPort;
import dev.limiter.protocol.MessageType;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

    private static final Pattern MEMBER = Pattern.compile("\\{\"id\":\"([^\"]*)\",\"address\":\"([^\"]*)\"}");
    private static final Pattern GROUP = Pattern.compile("\\{\"group\":(\\d+),\"leader\":\"([^\"]*)\",\"leaderAddress\":\"[^\"]*\"," +
        "\"role\":\"([^\"]*)\",\"term\":-?\\d+,\"appliedIndex\":(-?\\d+),\"shards\":\\[([\\d,]*)]}");

    /** One Raft group as one member reported it. */
    private record GroupView(int group, String leader, String role, long applied, String shards)
    {
    }

    private static List<GroupView> groups(final String answer)
    {
        final List<GroupView> groups = new ArrayList<>();
        if (answer == null)
        {
            return groups;
        }
        final Matcher m = GROUP.matcher(answer);
        while (m.find())
        {
            groups.add(new GroupView(Integer.parseInt(m.group(1)), m.group(2), m.group(3), Long.parseLong(m.group(4)), m.group(5)));
        }
        return groups;
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
            final String answer = ask(server);
            if (answer != null && answer.startsWith("{"))
            {
                final String membersPart = answer.substring(answer.indexOf("\"members\":"));
                final Matcher m = MEMBER.matcher(membersPart);
                while (m.find())
                {
                    addresses.add(m.group(2));
                }
                break;
            }
        }
        final List<String> answers = new ArrayList<>();
        boolean allAnswered = true;
        // The most advanced member's applied index, per Raft group: lag is measured against it.
        final Map<Integer, Long> maxApplied = new TreeMap<>();
        // Each group's leader and shards, as its leader (else any member) reports them.
        final Map<Integer, GroupView> groupLeaders = new TreeMap<>();
        for (final String address : addresses)
        {
            final String answer = ask(address);
            answers.add(answer);
            allAnswered &= answer != null && answer.startsWith("{");
            for (final GroupView group : groups(answer))
            {
                maxApplied.merge(group.group(), group.applied(), Math::max);
                if (!groupLeaders.containsKey(group.group()) || "LEADER".equals(group.role()))
                {
                    groupLeaders.put(group.group(), group);
                }
            }
        }
        final Map<String, Integer> leadersPerNode = new TreeMap<>();
        for (final String answer : answers)
        {
            if (answer != null && answer.startsWith("{") && answer.contains("\"groups\""))
            {
                leadersPerNode.put(text(answer, "id"), 0);
            }
        }
        groupLeaders.values().forEach(g -> leadersPerNode.merge(g.leader(), 1, Integer::sum));
        leadersPerNode.remove("null");
        final String timeoutsDiffer = electionTimeoutsDiffer(answers);
        if (json)
        {
            final StringBuilder out = new StringBuilder("{\"members\":[");
            int i = 0;
            for (final String address : addresses)
            {
                final String answer = answers.get(i);
                out.append(i++ == 0 ? "" : ",");
                if (answer != null && answer.startsWith("{"))
                {
                    out.append(answer, 0, answer.length() - 1).append(",\"lag\":").append(lag(answer, maxApplied)).append('}');
                }
                else
                {
                    out.append("{\"address\":\"").append(address).append("\",\"role\":\"UNREACHABLE\",\"error\":\"")
                        .append(answer == null ? "no answer" : answer.replace("\"", "'")).append("\"}");
                }
            }
            out.append("],\"groups\":[");
            boolean first = true;
            for (final GroupView group : groupLeaders.values())
            {
                out.append(first ? "" : ",").append("{\"group\":").append(group.group()).append(",\"leader\":\"")
                    .append(group.leader()).append("\",\"shards\":[").append(group.shards()).append("]}");
                first = false;
            }
            out.append("],\"electionTimeoutsAgree\":").append(timeoutsDiffer == null);
            out.append(",\"leadersPerNode\":{");
            first = true;
            for (final Map.Entry<String, Integer> node : leadersPerNode.entrySet())
            {
                out.append(first ? "" : ",").append('"').append(node.getKey()).append("\":").append(node.getValue());
                first = false;
            }
            System.out.println(out.append("}}"));
        }
        else
        {
            System.out.printf(Locale.ROOT, "%-8s %-22s %-16s %-8s %-8s %-6s %-12s %-6s %s%n", "ID", "ADDRESS", "ROLE", "LEADS", "LEADER",
                "TERM", "APPLIED", "LAG", "BUCKETS(by shard)");
            int i = 0;
            for (final String address : addresses)
            {
                final String answer = answers.get(i++);
                if (answer == null || !answer.startsWith("{"))
                {
                    System.out.printf(Locale.ROOT, "%-8s %-22s %-16s %s%n", "?", address, "UNREACHABLE", answer == null ? "" : answer);
                    continue;
                }
                final long applied = number(answer, "appliedIndex");
                final String leads = groups(answer).stream().filter(g -> "LEADER".equals(g.role())).map(g -> String.valueOf(g.group()))
                    .reduce((a, b) -> a + "," + b).orElse(answer.contains("\"groups\"") ? "-" : "all");
                System.out.printf(Locale.ROOT, "%-8s %-22s %-16s %-8s %-8s %-6s %-12s %-6s %s%n", text(answer, "id"), address,
                    text(answer, "role"), leads, text(answer, "leader"), answer.contains("\"term\"") ? number(answer, "term") : "-",
                    answer.contains("\"appliedIndex\"") ? applied : "-",
                    answer.contains("\"appliedIndex\"") ? lag(answer, maxApplied) : "-", buckets(answer));
            }
            if (groupLeaders.size() > 1)
            {
                System.out.printf(Locale.ROOT, "%n%-6s %-8s %s%n", "GROUP", "LEADER", "SHARDS");
                groupLeaders.values().forEach(g -> System.out.printf(Locale.ROOT, "%-6d %-8s %s%n", g.group(), g.leader(), g.shards()));
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
    static String electionTimeoutsDiffer(final List<String> answers)
    {
        final Map<String, Long> byMember = new TreeMap<>();
        for (final String answer : answers)
        {
            if (answer != null && answer.startsWith("{") && answer.contains("\"clustered\":true"))
            {
                // A member of a build from before the option does not report it: it runs 150 ms.
                final long millis = number(answer, "electionTimeoutMs");
                byMember.put(text(answer, "id"), millis < 0 ? DEFAULT_ELECTION_TIMEOUT_MILLIS : millis);
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

    private static final Pattern REGION = Pattern.compile("\"region\":\\{\"name\":\"([^\"]+)\",\"leads\":(true|false)," +
        "\"slotMs\":(\\d+),\"shares\":\\[(.*?)\\],\"regions\":\\[(.*?)\\]\\}");
    private static final Pattern SHARE = Pattern.compile("\"policy\":\"([^\"]+)\",\"share\":([0-9.]+),\"demandPerSecond\":([0-9.]+)");
    private static final Pattern PEER = Pattern.compile("\"region\":\"([^\"]+)\",\"reportAgeMs\":(-?\\d+)");

    /** The region the nodes belong to (docs/regions.md): its shares as its leader has them, and how old each other region's report is. */
    private static void printRegion(final List<String> answers)
    {
        Matcher region = null;
        String from = null;
        for (final String answer : answers)
        {
            final Matcher m = answer == null ? null : REGION.matcher(answer);
            if (m != null && m.find() && (region == null || m.group(2).equals("true")))
            {
                region = m;
                from = text(answer, "id");
            }
        }
        if (region == null)
        {
            return;
        }
        System.out.printf(Locale.ROOT, "%nREGION %s (shares as %s has them; a region may raise its shares every %d ms x regions)%n",
            region.group(1), from, Long.parseLong(region.group(3)));
        System.out.printf(Locale.ROOT, "%-24s %-8s %s%n", "REGIONAL POLICY", "SHARE", "DEMAND/S (this node)");
        final Matcher share = SHARE.matcher(region.group(4));
        while (share.find())
        {
            System.out.printf(Locale.ROOT, "%-24s %-8s %s%n", share.group(1), share.group(2), share.group(3));
        }
        final Matcher peer = PEER.matcher(region.group(5));
        while (peer.find())
        {
            final long age = Long.parseLong(peer.group(2));
            System.out.println("other region " + peer.group(1) + ": " + (age < 0 ? "never heard from" : "last report " + age + " ms ago"));
        }
    }

    private String ask(final String hostPort)
    {
        try
        {
            final BlockingRequest.Answer answer = BlockingRequest.send(hostPort, MessageType.STATUS, new byte[0], timeoutMs, context);
            return answer.type() == MessageType.STATUS_RESULT ? answer.text() : "unexpected answer " + MessageType.name(answer.type());
        }
        catch (final IOException | IllegalArgumentException e)
        {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /** How far this member is behind the most advanced one, in log entries, in the group where it is furthest. */
    private static long lag(final String answer, final Map<Integer, Long> maxApplied)
    {
        long lag = 0;
        for (final GroupView group : groups(answer))
        {
            lag = Math.max(lag, maxApplied.getOrDefault(group.group(), group.applied()) - group.applied());
        }
        return lag;
    }

    /** A number field of a STATUS answer, or -1. */
    static long number(final String json, final String name)
    {
        final Matcher m = Pattern.compile("\"" + name + "\":(-?\\d+)").matcher(json);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    /** A text field of a STATUS answer, or "-". */
    static String text(final String json, final String name)
    {
        final Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]*)\"").matcher(json);
        return m.find() ? m.group(1) : "-";
    }

    private static String buckets(final String json)
    {
        final Matcher m = Pattern.compile("\"buckets\":(\\d+)").matcher(json);
        final StringBuilder sb = new StringBuilder();
        while (m.find())
        {
            sb.append(sb.length() == 0 ? "" : "/").append(m.group(1));
        }
        return sb.toString();
    }

    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new StatusCommand()).execute(args));
    }
}
