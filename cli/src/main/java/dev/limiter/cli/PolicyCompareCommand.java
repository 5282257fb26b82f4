package dev.limiter.cli;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code policy compare ID}: what the policy's shadow version would have answered against what was
 * enforced, per tenant and route, summed over the nodes that decided (each node counts its own
 * decisions: GET /v1/policies/{id}/compare on every --admin address).
 */
@Command(
    name = "compare",
    mixinStandardHelpOptions = true,
    description = {
        "Compares a policy's shadow version (mode SHADOW, or a rollout's othersInShadow) with what was enforced:",
        "the tenants and routes it would newly reject (enforced allowed, shadow would deny) or newly free",
        "(enforced denied, shadow would allow), with counts, most affected first, summed over every node that answers.",
        "Counts cover one shadow version and one enforced version: they start over when either changes.",
        "Each node keeps 2 hours in 5-minute windows and its busiest 128 tenant/route pairs per window and shard;",
        "decisions of pairs beyond that are counted as untracked.",
        "  ./limiter policy compare orders-api",
        "  ./limiter policy compare orders-api --since 30m --json",
        "Exit status: 0 compared, 1 no node could compare (unknown policy, no shadow version, older nodes),",
        "2 bad input."},
    sortOptions = false)
final class PolicyCompareCommand implements Callable<Integer>
{
    private static final String PREFIX = "limiter policy compare: ";
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();

    @ParentCommand
    PolicyCommand parent;

    @Parameters(index = "0", paramLabel = "ID", description = "The policy's id.")
    String id;

    @Option(names = "--since", paramLabel = "WHEN", defaultValue = "1h",
        description = "From when: how long ago (30m, 1h, 2h) or an RFC 3339 time; served at 5-minute resolution, " +
            "at most 2 hours back (default: ${DEFAULT-VALUE}).")
    String since;

    @Mixin
    AdminClient.Options admin;

    /** One node's answer, as the contract prints it. */
    static final class Comparison
    {
        String policy;
        long enforcedVersion;
        long shadowVersion;
        long sinceMillis;
        long windowMillis;
        List<Row> rows = new ArrayList<>();
        long tracked;
        long untracked;
        /** Only in the merged document: the nodes counted, and those left out (and why). */
        List<String> nodes;
        List<String> skipped;
    }

    /** One tenant and route. */
    static final class Row
    {
        String tenant;
        String route;
        long decisions;
        long enforcedRejections;
        long predictedRejections;
        long newlyRejected;
        long newlyFreed;

        long impact()
        {
            return newlyRejected + newlyFreed;
        }
    }

    @Override
    public Integer call() throws AdminClient.Failure
    {
        final String policyId = PolicyCommand.id(id);
        final long sinceMillis = AuditCommand.since(since, Instant.now()).toEpochMilli();
        final String path = PolicyCommand.path(policyId) + "/compare?since=" + sinceMillis;
        final List<String> addresses = List.copyOf(admin.admin);
        final Map<String, Comparison> answers = new LinkedHashMap<>();
        final List<String> older = new ArrayList<>();
        final List<String> misses = new ArrayList<>();
        String nothing = null;
        AdminClient.Failure refusal = null;
        try
        {
            for (final String address : addresses)
            {
                admin.admin = List.of(address);
                final String node = address.strip();
                final AdminClient client = admin.connect(parent.io);
                final AdminClient.Answer answer;
                try
                {
                    answer = client.get(path);
                }
                catch (final AdminClient.Failure e)
                {
                    misses.add(node + ": " + e.getMessage());
                    continue;
                }
                final String error = AdminClient.errorMessage(answer);
                if (answer.status() == 200)
                {
                    answers.put(node, parse(answer));
                }
                else if (answer.status() == 404 && error != null && error.startsWith("no such endpoint"))
                {
                    older.add(node);
                }
                else if (answer.status() == 404 && error != null)
                {
                    nothing = error; // unknown policy, or no shadow version in force
                }
                else
                {
                    refusal = refusal == null ? client.refused(answer) : refusal;
                    misses.add(node + ": " + client.refused(answer).getMessage());
                }
            }
        }
        finally
        {
            admin.admin = addresses;
        }
        final PrintStream err = parent.io.err();
        older.forEach(node -> err.println(PREFIX + "skipped " + node + ": an older node, its admin API has no " +
            "/v1/policies/{id}/compare"));
        if (!String.join(",", addresses).equals(AdminClient.Options.DEFAULT_ADMIN) || answers.isEmpty())
        {
            misses.forEach(miss -> err.println(PREFIX + "skipped " + miss));
        }
        if (answers.isEmpty())
        {
            if (nothing != null)
            {
                throw AdminClient.failed(nothing);
            }
            if (refusal != null)
            {
                throw refusal;
            }
            throw AdminClient.failed(older.isEmpty() ? "no node answered" :
                "no node can compare: " + String.join(", ", older) + " run an older build without shadow comparisons");
        }
        final Comparison merged = merge(answers);
        if (admin.json)
        {
            parent.io.out().println(GSON.toJson(merged));
            return 0;
        }
        print(parent.io.out(), merged);
        return 0;
    }

    private static Comparison parse(final AdminClient.Answer answer) throws AdminClient.Failure
    {
        try
        {
            final Comparison comparison = GSON.fromJson(answer.body(), Comparison.class);
            if (comparison == null || comparison.rows == null)
            {
                throw new JsonParseException("no rows");
            }
            return comparison;
        }
        catch (final JsonParseException e)
        {
            throw AdminClient.failed("unexpected answer from " + answer.address() + ": not a shadow comparison (" +
                e.getMessage() + ")");
        }
    }

    /**
     * The nodes' comparisons summed per tenant and route: only those of the newest shadow version (and the
     * newest enforced version counted with it), so that versions never mix; the others are named as skipped.
     */
    static Comparison merge(final Map<String, Comparison> answers)
    {
        final Comparison newest = answers.values().stream()
            .max(Comparator.comparingLong((Comparison c) -> c.shadowVersion).thenComparingLong(c -> c.enforcedVersion))
            .orElseThrow();
        final Comparison out = new Comparison();
        out.policy = newest.policy;
        out.shadowVersion = newest.shadowVersion;
        out.enforcedVersion = newest.enforcedVersion;
        out.windowMillis = newest.windowMillis;
        out.sinceMillis = Long.MAX_VALUE;
        out.nodes = new ArrayList<>();
        out.skipped = new ArrayList<>();
        final Map<String, Row> rows = new LinkedHashMap<>();
        answers.forEach((node, c) ->
        {
            if (c.shadowVersion != out.shadowVersion || c.enforcedVersion != out.enforcedVersion)
            {
                out.skipped.add(node + " (counts shadow version " + c.shadowVersion + " against enforced version " +
                    c.enforcedVersion + ")");
                return;
            }
            out.nodes.add(node);
            out.sinceMillis = Math.min(out.sinceMillis, c.sinceMillis);
            out.untracked += c.untracked;
            for (final Row row : c.rows)
            {
                final Row sum = rows.computeIfAbsent(row.tenant + '\u0000' + row.route, k ->
                {
                    final Row r = new Row();
                    r.tenant = row.tenant;
                    r.route = row.route;
                    return r;
                });
                sum.decisions += row.decisions;
                sum.enforcedRejections += row.enforcedRejections;
                sum.predictedRejections += row.predictedRejections;
                sum.newlyRejected += row.newlyRejected;
                sum.newlyFreed += row.newlyFreed;
            }
        });
        out.rows = new ArrayList<>(rows.values());
        out.rows.sort(Comparator.comparingLong(Row::impact).reversed()
            .thenComparing(Comparator.comparingLong((Row r) -> r.decisions).reversed())
            .thenComparing(r -> r.tenant).thenComparing(r -> r.route));
        out.tracked = out.rows.size();
        return out;
    }

    private static void print(final PrintStream out, final Comparison c)
    {
        final String against = c.enforcedVersion == 0 ? "what other policies enforced (a new id)" :
            "enforced version " + c.enforcedVersion;
        out.println("policy " + c.policy + ": shadow version " + c.shadowVersion + " against " + against + ", since " +
            Instant.ofEpochMilli(c.sinceMillis) + " (" + c.windowMillis / 60_000 + "-minute windows; " +
                "counts start over " +
            "when either version changes)");
        out.println("nodes: " + String.join(", ", c.nodes) +
            (c.skipped.isEmpty() ? "" : "; skipped, other versions: " + String.join(", ", c.skipped)));
        long decisions = c.untracked;
        long newlyRejected = 0;
        long newlyFreed = 0;
        long rejectingTenants = 0;
        long freeingTenants = 0;
        final List<List<String>> table = new ArrayList<>();
        for (final Row row : c.rows)
        {
            decisions += row.decisions;
            newlyRejected += row.newlyRejected;
            newlyFreed += row.newlyFreed;
            rejectingTenants += row.newlyRejected > 0 ? 1 : 0;
            freeingTenants += row.newlyFreed > 0 ? 1 : 0;
            if (row.impact() > 0)
            {
                table.add(List.of(row.tenant.isEmpty() ? "-" : row.tenant, row.route.isEmpty() ? "-" : row.route,
                    Long.toString(row.newlyRejected), Long.toString(row.newlyFreed), Long.toString(row.decisions),
                    Long.toString(row.enforcedRejections), Long.toString(row.predictedRejections)));
            }
        }
        if (table.isEmpty())
        {
            out.println("no difference: the shadow version would have answered all " + decisions +
                " decisions as they were enforced");
        }
        else
        {
            Output.table(out, List.of("TENANT", "ROUTE", "NEWLY REJECTED", "NEWLY FREED", "DECISIONS",
                "ENFORCED REJECTED", "SHADOW WOULD REJECT"), table);
            out.println("would newly reject " + newlyRejected + " requests (" + rejectingTenants
                + " tenant/route pairs) and newly free " + newlyFreed + " (" + freeingTenants
                + " pairs), of " + decisions + " decisions");
        }
        if (c.untracked > 0)
        {
            out.println(c.untracked + " decisions were of tenant/route pairs beyond the nodes' tables (untracked): " +
                "the pairs listed are the busiest");
        }
    }
}
