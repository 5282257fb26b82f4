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
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;

/** {@code ./limiter status}: members, leader, term, applied index and lag, from every member. */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    description = {
        "Asks a node (and through it every member it knows) how the cluster stands: members, role per",
        "shard, leader, term, applied index and lag behind the most advanced member.",
        "--json prints one JSON object: {\"members\":[{\"id\":..,\"address\":..,\"role\":..,\"shards\":[..],...}]}.",
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
        long maxApplied = Long.MIN_VALUE;
        for (final String address : addresses)
        {
            final String answer = ask(address);
            answers.add(answer);
            allAnswered &= answer != null && answer.startsWith("{");
            if (answer != null && answer.startsWith("{"))
            {
                maxApplied = Math.max(maxApplied, number(answer, "appliedIndex"));
            }
        }
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
                    out.append(answer, 0, answer.length() - 1).append(",\"lag\":")
                        .append(Math.max(0, maxApplied - number(answer, "appliedIndex"))).append('}');
                }
                else
                {
                    out.append("{\"address\":\"").append(address).append("\",\"role\":\"UNREACHABLE\",\"error\":\"")
                        .append(answer == null ? "no answer" : answer.replace("\"", "'")).append("\"}");
                }
            }
            System.out.println(out.append("]}"));
        }
        else
        {
            System.out.printf(Locale.ROOT, "%-8s %-22s %-16s %-8s %-6s %-12s %-6s %s%n", "ID", "ADDRESS", "ROLE", "LEADER", "TERM",
                "APPLIED", "LAG", "BUCKETS(by shard)");
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
                System.out.printf(Locale.ROOT, "%-8s %-22s %-16s %-8s %-6s %-12s %-6s %s%n", text(answer, "id"), address,
                    text(answer, "role"), text(answer, "leader"), answer.contains("\"term\"") ? number(answer, "term") : "-",
                    answer.contains("\"appliedIndex\"") ? applied : "-",
                    answer.contains("\"appliedIndex\"") ? Math.max(0, maxApplied - applied) : "-", buckets(answer));
            }
        }
        return allAnswered ? 0 : 1;
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

    private static long number(final String json, final String name)
    {
        final Matcher m = Pattern.compile("\"" + name + "\":(-?\\d+)").matcher(json);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    private static String text(final String json, final String name)
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
