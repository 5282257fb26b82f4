package dev.limiter.cli;

import com.google.protobuf.Value;
import dev.limiter.protocol.policy.HotKey;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.ShardHotKeys;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** {@code ./limiter hot-keys}: the busiest bucket keys of every node, from a sample of its decisions. */
@Command(
    name = "hot-keys",
    mixinStandardHelpOptions = true,
    description = {
        "Shows the busiest bucket keys (tenant, principal, IP or a route's global budget) of each node and shard,",
        "with their share of the tokens the shard was recently asked for and their rate (tokens per second).",
        "Each node samples about 1 in 16 of the tokens its own decisions ask for",
        "(so ask every node: in a cluster only the leader decides). --json prints {\"host:port\": HotKeyReport}.",
        "  ./limiter hot-keys",
        "  ./limiter hot-keys --admin 10.0.0.1:7480,10.0.0.2:7480",
        "The admin token comes from --token, $LIMITER_ADMIN_TOKEN, data/admin-token or data/node/admin-token.",
        "Exit status: 0 at least one node answered, 1 none did or the API refused, 2 bad input."},
    sortOptions = false)
public final class HotKeysCommand extends AdminCommand
{
    private static final String PREFIX = "limiter hot-keys: ";

    @Mixin
    AdminClient.Options admin;

    private HotKeysCommand(final AdminClient.Io io)
    {
        super(io);
    }

    /**
     * Runs {@code ./limiter hot-keys} with these arguments.
     *
     * @return the exit status: 0 at least one node answered, 1 none did or the API refused, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err, final Map<String, String> env,
                          final Path workDir)
    {
        return AdminCommand.run(HotKeysCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(HotKeysCommand::run, args);
    }

    @Override
    public Integer call() throws AdminClient.Failure
    {
        // Every node reports its own shards: ask each address, not the first that answers.
        final List<String> addresses = List.copyOf(admin.admin);
        final Map<String, HotKeyReport> reports = new LinkedHashMap<>();
        final List<String> misses = new ArrayList<>();
        AdminClient.Failure refusal = null;
        try
        {
            for (final String address : addresses)
            {
                admin.admin = List.of(address);
                final String node = address.strip();
                try
                {
                    reports.put(node, admin.connect(io).call("GET", "/v1/hot-keys", null, HotKeyReport.getDefaultInstance()));
                }
                catch (final AdminClient.Failure e)
                {
                    if (e.exitStatus == AdminClient.USAGE)
                    {
                        throw e;
                    }
                    refusal = refusal == null ? e : refusal;
                    misses.add(node + ": " + e.getMessage());
                }
            }
        }
        finally
        {
            admin.admin = addresses;
        }
        if (reports.isEmpty())
        {
            throw refusal != null && misses.size() == 1 ? refusal : AdminClient.failed("no node gave its hot keys: " + String.join("; ", misses));
        }
        final PrintStream out = io.out();
        // With the default addresses (a single node's port and the local cluster's three), the ones
        // not in use are expected to be missing: say nothing about them.
        if (!String.join(",", addresses).equals(AdminClient.Options.DEFAULT_ADMIN))
        {
            misses.forEach(miss -> io.err().println(PREFIX + "skipped " + miss));
        }
        if (admin.json)
        {
            final List<String> parts = new ArrayList<>();
            reports.forEach((address, report) -> parts.add(Output.json(Value.newBuilder().setStringValue(address)) +
                ": " + Output.json(report)));
            out.println("{" + String.join(", ", parts) + "}");
            return 0;
        }
        final List<List<String>> rows = new ArrayList<>();
        reports.forEach((address, report) ->
        {
            for (final ShardHotKeys shard : report.getShardsList())
            {
                for (final HotKey key : shard.getTopList())
                {
                    final double sampled = Math.max(1, shard.getSampled());
                    final String shown = key.getScope() == Scope.GLOBAL ? "(global)" :
                        key.getKey().isEmpty() ? "-" : key.getKey();
                    rows.add(List.of(address, Integer.toString(shard.getShard()), shown,
                        key.getPolicyId(), Output.number(key.getPolicyVersion()), key.getScope().name(),
                        String.format(Locale.ROOT, "%.1f%%", 100 * key.getShare()), Output.number(key.getTokensPerSecond()),
                        String.format(Locale.ROOT, "%.1f%%", 100 * key.getOverestimate() / sampled)));
                }
            }
        });
        if (rows.isEmpty())
        {
            out.println("no decisions sampled yet on " + String.join(", ", reports.keySet()));
        }
        else
        {
            Output.table(out, List.of("NODE", "SHARD", "KEY", "POLICY", "VERSION", "SCOPE", "SHARE", "TOKENS/S", "AT MOST OTHERS'"), rows);
        }
        return 0;
    }
}
