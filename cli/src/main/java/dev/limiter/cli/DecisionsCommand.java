package dev.limiter.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.Callable;

/**
 * {@code ./limiter decisions rejected}: the rejected decisions each node sampled, newest first, from
 * every member's admin API (each node samples only what it decided). Also how {@code ./limiter appeal
 * add} finds a decision by its id ({@link #find}).
 */
@Command(
    name = "decisions",
    mixinStandardHelpOptions = true,
    description = {
        "Shows the rejected decisions the nodes sampled (GET /v1/decisions/rejected on each member):",
        "id (as the Limiter-Decision-Id header gave it), time, policy and version, tenant, route and reason.",
        "Each node keeps its own bounded sample (every rejection up to 1000 a second, then 1 in 64), so every",
        "member is asked. ./limiter appeal add ID appeals one of them as a false rejection.",
        "The admin token comes from --token, $LIMITER_ADMIN_TOKEN, data/admin-token or data/node/admin-token.",
        "Exit status: 0 at least one node answered, 1 none did or the API refused, 2 bad input."},
    subcommands = {DecisionsCommand.Rejected.class, HelpCommand.class},
    sortOptions = false)
public final class DecisionsCommand extends AdminCommand.Group
{
    private static final String PREFIX = "limiter decisions: ";

    private DecisionsCommand(final AdminClient.Io io)
    {
        super(io, "say what to show: rejected (see ./limiter decisions --help)");
    }

    /**
     * Runs {@code ./limiter decisions} with these arguments.
     *
     * @return the exit status: 0 done, 1 no node answered or the API refused, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err,
        final Map<String, String> env, final Path workDir)
    {
        return AdminCommand.run(DecisionsCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(DecisionsCommand::run, args);
    }

    /** What one member answered: its address and document, or why it did not. */
    record NodeAnswer(String address, JsonObject document, AdminClient.Answer answer, String miss)
    {
    }

    /**
     * Asks every address of {@code admin} for {@code pathAndQuery}, one at a time.
     *
     * @throws AdminClient.Failure bad options (a usage failure), or a node that refused the call (401, 400)
     */
    static List<NodeAnswer> askEach(final AdminClient.Options admin, final AdminClient.Io io, final String pathAndQuery)
        throws AdminClient.Failure
    {
        final List<String> addresses = List.copyOf(admin.admin);
        final List<NodeAnswer> answers = new ArrayList<>();
        try
        {
            for (final String address : addresses)
            {
                admin.admin = List.of(address);
                final AdminClient client = admin.connect(io);
                final AdminClient.Answer answer;
                try
                {
                    answer = client.get(pathAndQuery);
                }
                catch (final AdminClient.Failure e)
                {
                    answers.add(new NodeAnswer(address.strip(), null, null, e.getMessage()));
                    continue;
                }
                if (answer.status() == 404)
                {
                    answers.add(new NodeAnswer(address.strip(), null, answer, null));
                    continue;
                }
                if (answer.status() / 100 != 2)
                {
                    throw client.refused(answer);
                }
                answers.add(new NodeAnswer(address.strip(), parse(answer), answer, null));
            }
        }
        finally
        {
            admin.admin = addresses;
        }
        return answers;
    }

    private static JsonObject parse(final AdminClient.Answer answer) throws AdminClient.Failure
    {
        try
        {
            final JsonElement parsed = JsonParser.parseString(answer.body());
            if (parsed.isJsonObject())
            {
                return parsed.getAsJsonObject();
            }
        }
        catch (final JsonParseException e)
        {
            // told below
        }
        throw AdminClient.failed("unexpected answer from " + answer.address() + " (HTTP " + answer.status() +
            "): not a JSON object; is that a limiter node's admin port?");
    }

    /**
     * The decision {@code id} as the first member that sampled it has it, or null when none did.
     *
     * @throws AdminClient.Failure when no member answered at all, or one refused the call
     */
    static JsonObject find(final AdminClient.Options admin, final AdminClient.Io io, final String id)
        throws AdminClient.Failure
    {
        final List<NodeAnswer> answers = askEach(admin, io, "/v1/decisions/rejected/" + AdminClient.encode(id));
        final StringJoiner misses = new StringJoiner("; ");
        boolean anyAnswered = false;
        for (final NodeAnswer answer : answers)
        {
            if (answer.document() != null)
            {
                return answer.document();
            }
            anyAnswered |= answer.answer() != null;
            if (answer.miss() != null)
            {
                misses.add(answer.miss());
            }
        }
        if (!anyAnswered)
        {
            throw AdminClient.failed("no member answered to look decision " + id + " up: " + misses);
        }
        return null;
    }

    /** {@code decisions rejected}: every member's sampled rejections, newest first. */
    @Command(
        name = "rejected",
        mixinStandardHelpOptions = true,
        description = {
            "Lists the rejected decisions the members sampled, newest first, at most --limit of each member.",
            "  ./limiter decisions rejected --policy orders-api --tenant acme",
            "--json prints {\"host:port\": the node's document} (docs/control-plane.md#appeals)."},
        sortOptions = false)
    static final class Rejected implements Callable<Integer>
    {
        @ParentCommand
        DecisionsCommand parent;

        @Option(names = "--policy", paramLabel = "ID", description = "Only decisions of this policy.")
        String policy;

        @Option(names = "--tenant", paramLabel = "T", description = "Only decisions of this tenant.")
        String tenant;

        @Option(names = "--limit", paramLabel = "N", defaultValue = "50",
            description = "At most N decisions of each member, 1 to 4096 (default: ${DEFAULT-VALUE}).")
        int limit;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            if (limit < 1 || limit > 4096)
            {
                throw AdminClient.usage("--limit must be from 1 to 4096, was " + limit);
            }
            final StringBuilder query = new StringBuilder("/v1/decisions/rejected?limit=").append(limit);
            if (policy != null)
            {
                query.append("&policy=").append(AdminClient.encode(AdminClient.required(policy, "--policy is empty")));
            }
            if (tenant != null)
            {
                query.append("&tenant=").append(AdminClient.encode(AdminClient.required(tenant, "--tenant is empty")));
            }
            final List<NodeAnswer> answers = askEach(admin, parent.io, query.toString());
            final Map<String, JsonObject> documents = new LinkedHashMap<>();
            final List<String> misses = new ArrayList<>();
            for (final NodeAnswer answer : answers)
            {
                if (answer.document() != null)
                {
                    documents.put(answer.address(), answer.document());
                }
                else
                {
                    misses.add(answer.address() + ": " + (answer.miss() != null ? answer.miss() :
                        "no /v1/decisions/rejected (an older build)"));
                }
            }
            if (documents.isEmpty())
            {
                throw AdminClient.failed("no member gave its rejected decisions: " + String.join("; ", misses));
            }
            if (!String.join(",", admin.admin).equals(AdminClient.Options.DEFAULT_ADMIN))
            {
                misses.forEach(miss -> parent.io.err().println(PREFIX + "skipped " + miss));
            }
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                final JsonObject all = new JsonObject();
                documents.forEach(all::add);
                out.println(all);
                return 0;
            }
            print(out, documents);
            return 0;
        }

        private static void print(final PrintStream out, final Map<String, JsonObject> documents)
        {
            record Row(long at, List<String> cells)
            {
            }
            final List<Row> rows = new ArrayList<>();
            final StringJoiner totals = new StringJoiner("; ");
            documents.forEach((address, document) ->
            {
                final String node = text(document, "node");
                totals.add(node + " (" + address + "): " + document.get("sampled").getAsLong() + " sampled, " +
                    document.get("dropped").getAsLong() + " not sampled");
                for (final JsonElement element : document.getAsJsonArray("decisions"))
                {
                    final JsonObject d = element.getAsJsonObject();
                    final long at = d.get("atMillis").getAsLong();
                    rows.add(new Row(at, List.of(text(d, "id"), Instant.ofEpochMilli(at).toString(), node,
                        text(d, "policy"), Long.toString(d.get("version").getAsLong()), text(d, "tenant"),
                        text(d, "route"), text(d, "reason"))));
                }
            });
            rows.sort(Comparator.comparingLong(Row::at).reversed());
            if (rows.isEmpty())
            {
                out.println("no rejected decisions sampled");
            }
            else
            {
                Output.table(out, List.of("ID", "TIME", "NODE", "POLICY", "VERSION", "TENANT", "ROUTE", "REASON"),
                    rows.stream().map(Row::cells).toList());
            }
            out.println(totals);
        }
    }

    static String text(final JsonObject object, final String field)
    {
        final JsonElement value = object.get(field);
        return value == null || value.isJsonNull() ? "" : value.getAsString();
    }
}
