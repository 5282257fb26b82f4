package dev.limiter.cli;

import dev.limiter.protocol.policy.AuditPage;
import dev.limiter.protocol.policy.AuditRecord;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code ./limiter audit}: who changed which policy, when and why, from the cluster's audit log. */
@Command(
    name = "audit",
    mixinStandardHelpOptions = true,
    description = {
        "Lists the policy changes the cluster has recorded: who made each, when, why and what changed.",
        "In log order. --json prints the AuditPage.",
        "  ./limiter audit --since 1h",
        "  ./limiter audit --policy orders-api --since 2026-12-01T00:00:00Z",
        "The admin token comes from --token, $LIMITER_ADMIN_TOKEN, data/admin-token or data/node/admin-token.",
        "Exit status: 0 done, 1 the API refused or no node answered, 2 bad input (nothing was sent)."},
    sortOptions = false)
public final class AuditCommand extends AdminCommand
{
    private static final String PREFIX = "limiter audit: ";

    /** "90s", "30m", "1h", "2d", "1h30m": that long ago. */
    private static final Pattern DURATION = Pattern.compile("(?:\\d{1,9}(?:ms|s|m|h|d))+");
    private static final Pattern DURATION_PART = Pattern.compile("(\\d{1,9})(ms|s|m|h|d)");

    @Option(names = "--since", paramLabel = "WHEN",
        description = "Only records from then on: an RFC 3339 time (2026-12-03T09:00:00Z) or how long ago (30m, 1h, 2d, 1h30m).")
    String since;

    @Option(names = "--policy", paramLabel = "ID", description = "Only records of this policy.")
    String policy;

    @Option(names = "--owner", paramLabel = "O", description = "Only records whose version has this owner.")
    String owner;

    @Option(names = "--limit", paramLabel = "N", description = "At most N records (the API's default when not given).")
    Integer limit;

    @Mixin
    AdminClient.Options admin;

    private AuditCommand(final AdminClient.Io io)
    {
        super(io);
    }

    /**
     * Runs {@code ./limiter audit} with these arguments.
     *
     * @param out     where answers go
     * @param err     where the one-line failure report goes
     * @param env     the environment (for LIMITER_ADMIN_TOKEN)
     * @param workDir the directory data/admin-token is read from
     * @return the exit status: 0 done, 1 the API refused or no node answered, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err, final Map<String, String> env,
                          final Path workDir)
    {
        return AdminCommand.run(AuditCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(AuditCommand::run, args);
    }

    @Override
    public Integer call() throws AdminClient.Failure
    {
        final StringJoiner query = new StringJoiner("&", "?", "").setEmptyValue("");
        if (since != null)
        {
            query.add("since=" + AdminClient.encode(since(since, Instant.now()).toString()));
        }
        if (policy != null)
        {
            query.add("policy=" + AdminClient.encode(policy.strip()));
        }
        if (owner != null)
        {
            query.add("owner=" + AdminClient.encode(owner.strip()));
        }
        if (limit != null)
        {
            if (limit < 1)
            {
                throw AdminClient.usage("--limit must be 1 or more, was " + limit);
            }
            query.add("limit=" + limit);
        }
        final AuditPage page = admin.connect(io).call("GET", "/v1/audit" + query, null, AuditPage.getDefaultInstance());
        final PrintStream out = io.out();
        if (admin.json)
        {
            out.println(Output.json(page));
            return 0;
        }
        if (page.getRecordsCount() == 0)
        {
            out.println("no audit records" + (query.length() == 0 ? "" : " match"));
            return 0;
        }
        final List<List<String>> rows = new ArrayList<>();
        for (final AuditRecord record : page.getRecordsList())
        {
            rows.add(List.of(Output.number(record.getSequence()), Output.time(record.hasAt(), record.getAt()), record.getActor(),
                record.getAction(), record.getPolicyId(), record.getVersion() == 0 ? "-" : Output.number(record.getVersion()),
                record.getOwner(), record.getReason(), record.getDetail()));
        }
        Output.table(out, List.of("SEQ", "AT", "ACTOR", "ACTION", "POLICY", "VERSION", "OWNER", "REASON", "DETAIL"), rows);
        return 0;
    }

    /**
     * The instant {@code --since} names: an RFC 3339 time, or a duration ("1h", "30m", "1h30m") meaning
     * that long before {@code now} (to the second).
     */
    static Instant since(final String text, final Instant now) throws AdminClient.Failure
    {
        final String value = text.strip();
        try
        {
            if (DURATION.matcher(value).matches())
            {
                Duration ago = Duration.ZERO;
                final Matcher part = DURATION_PART.matcher(value);
                while (part.find())
                {
                    ago = ago.plus(Duration.of(Long.parseLong(part.group(1)), unit(part.group(2))));
                }
                return now.minus(ago).truncatedTo(ChronoUnit.SECONDS);
            }
            return OffsetDateTime.parse(value).toInstant();
        }
        catch (final DateTimeException | ArithmeticException e)
        {
            throw AdminClient.usage("--since '" + text + "' is neither an RFC 3339 time (2026-12-03T09:00:00Z) nor how long ago " +
                "(90s, 30m, 1h, 2d, 1h30m)");
        }
    }

    private static ChronoUnit unit(final String name)
    {
        return switch (name)
        {
            case "ms" -> ChronoUnit.MILLIS;
            case "s" -> ChronoUnit.SECONDS;
            case "m" -> ChronoUnit.MINUTES;
            case "h" -> ChronoUnit.HOURS;
            default -> ChronoUnit.DAYS;
        };
    }
}
