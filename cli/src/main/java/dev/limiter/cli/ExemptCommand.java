package dev.limiter.cli;

import com.google.protobuf.Timestamp;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.ExemptionList;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

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
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ./limiter exempt add|list|remove}: lets the requests of a tenant, a principal or a route
 * bypass every limit until an expiry, through the admin HTTP API of the nodes. Every change names
 * who made it and why.
 */
@Command(
    name = "exempt",
    mixinStandardHelpOptions = true,
    description = {
        "Shows and changes the cluster's exemptions through the nodes' admin HTTP API (/v1/exemptions).",
        "Requests an exemption covers are allowed without spending tokens until it expires; the cluster removes it then.",
        "Changes go to the leader: a node that is not the leader passes the call to the next --admin address.",
        "./limiter audit shows who added or removed each exemption, when and why.",
        "The admin token comes from --token, $LIMITER_ADMIN_TOKEN, data/admin-token or data/node/admin-token.",
        "Exit status: 0 done, 1 the API refused or no node answered, 2 bad input (nothing was sent)."},
    subcommands = {
        ExemptCommand.Add.class,
        ExemptCommand.ListExemptions.class,
        ExemptCommand.Remove.class,
        HelpCommand.class},
    sortOptions = false)
public final class ExemptCommand extends AdminCommand.Group
{
    private static final String PREFIX = "limiter exempt: ";

    /** "90s", "30m", "2h", "1d", "1h30m": that long from now. */
    private static final Pattern DURATION = Pattern.compile("(?:\\d{1,9}[smhd])+");
    private static final Pattern DURATION_PART = Pattern.compile("(\\d{1,9})([smhd])");

    private ExemptCommand(final AdminClient.Io io)
    {
        super(io, "say what to do: add, list or remove (see ./limiter exempt --help)");
    }

    /**
     * Runs {@code ./limiter exempt} with these arguments.
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
        return AdminCommand.run(ExemptCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(ExemptCommand::run, args);
    }

    private static String id(final String id) throws AdminClient.Failure
    {
        return AdminClient.required(id, "the exemption id is empty");
    }


    private static String path(final String id)
    {
        return "/v1/exemptions/" + AdminClient.encode(id);
    }

    /** An optional selector field: null when not given, refused when given but empty. */
    private static String selectorField(final String option, final String value) throws AdminClient.Failure
    {
        if (value == null)
        {
            return null;
        }
        if (value.isBlank())
        {
            throw AdminClient.usage(option + " is empty: leave it out, or name what the exemption covers");
        }
        return value.strip();
    }

    /**
     * When the exemption ends: {@code expiresIn} ("90s", "30m", "2h", "1d", "1h30m") after {@code now}, to the
     * second, or the RFC 3339 time {@code expiresAt}. Exactly one must be given, and the end must be after now.
     */
    static Instant expiry(final String expiresIn, final String expiresAt, final Instant now) throws AdminClient.Failure
    {
        if (expiresIn != null && expiresAt != null)
        {
            throw AdminClient.usage("give either --expires-in or --expires-at, not both");
        }
        if (expiresIn == null && expiresAt == null)
        {
            throw AdminClient.usage("no expiry given: pass --expires-in DURATION (e.g. 2h) or --expires-at RFC3339 " +
                "(e.g. 2026-12-03T12:00:00Z); every exemption ends");
        }
        final Instant end;
        if (expiresIn != null)
        {
            final String value = expiresIn.strip();
            if (!DURATION.matcher(value).matches())
            {
                throw AdminClient.usage("--expires-in '" + expiresIn + "' is not a duration: a number and a unit, s, m, h or d " +
                    "(90s, 30m, 2h, 1d, 1h30m)");
            }
            try
            {
                Duration length = Duration.ZERO;
                final Matcher part = DURATION_PART.matcher(value);
                while (part.find())
                {
                    length = length.plus(Duration.of(Long.parseLong(part.group(1)), unit(part.group(2))));
                }
                if (length.isZero())
                {
                    throw AdminClient.usage("--expires-in must be longer than 0 (e.g. 30m, 2h, 1d)");
                }
                end = now.plus(length).truncatedTo(ChronoUnit.SECONDS);
            }
            catch (final DateTimeException | ArithmeticException e)
            {
                throw AdminClient.usage("--expires-in '" + expiresIn + "' is too far ahead");
            }
        }
        else
        {
            try
            {
                end = OffsetDateTime.parse(expiresAt.strip()).toInstant();
            }
            catch (final DateTimeException e)
            {
                throw AdminClient.usage("--expires-at '" + expiresAt + "' is not an RFC 3339 time (e.g. 2026-12-03T12:00:00Z)");
            }
            if (!end.isAfter(now))
            {
                throw AdminClient.usage("--expires-at " + end + " is not in the future (now " + now.truncatedTo(ChronoUnit.SECONDS) +
                    "): give a later time, or --expires-in DURATION");
            }
        }
        if (!Timestamps.isValid(end.getEpochSecond(), end.getNano()))
        {
            throw AdminClient.usage((expiresIn != null ? "--expires-in '" + expiresIn : "--expires-at '" + expiresAt) + "' is too far ahead");
        }
        return end;
    }

    private static ChronoUnit unit(final String name)
    {
        return switch (name)
        {
            case "s" -> ChronoUnit.SECONDS;
            case "m" -> ChronoUnit.MINUTES;
            case "h" -> ChronoUnit.HOURS;
            default -> ChronoUnit.DAYS;
        };
    }

    private static Timestamp timestamp(final Instant instant)
    {
        return Timestamp.newBuilder().setSeconds(instant.getEpochSecond()).setNanos(instant.getNano()).build();
    }

    /** {@code exempt add ID ...}: creates or replaces one exemption. */
    @Command(
        name = "add",
        mixinStandardHelpOptions = true,
        description = {
            "Lets the requests of a tenant, a principal or a route bypass every limit until an expiry.",
            "At least one of --tenant, --principal (with --tenant) and --route; a request must match every one given. "
                + "Exactly one of --expires-in and --expires-at.",
            "  ./limiter exempt add beta-acme --tenant acme --expires-in 2h \\",
            "      --owner sales --reason \"load test\"",
            "Prints e.g. 'exemption beta-acme in force until 2026-12-03T12:00:00Z'; --json the ChangeResult."},
        sortOptions = false)
    static final class Add implements Callable<Integer>
    {
        @ParentCommand
        ExemptCommand parent;

        @Parameters(index = "0", paramLabel = "ID", description = "The exemption's id ([a-z0-9][a-z0-9._-]{0,62}).")
        String id;

        @Option(names = "--tenant", paramLabel = "T", description = "Only requests of this tenant.")
        String tenant;

        @Option(names = "--principal", paramLabel = "P", description = "Only requests of this principal (needs --tenant).")
        String principal;

        @Option(names = "--route", paramLabel = "R", description = "Only requests to this route template, e.g. /v1/orders/{id}.")
        String route;

        @Option(names = "--owner", required = true, paramLabel = "O", description = "Team or person answerable for it.")
        String owner;

        @Option(names = "--reason", required = true, paramLabel = "R", description = "Why (the audit log keeps it).")
        String reason;

        @Option(names = "--expires-in", paramLabel = "DURATION", description = "Ends that long from now: 90s, 30m, 2h, 1d, 1h30m.")
        String expiresIn;

        @Option(names = "--expires-at", paramLabel = "RFC3339", description = "Ends at this time, e.g. 2026-12-03T12:00:00Z.")
        String expiresAt;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final String exemptionId = id(id);
            final String tenantValue = selectorField("--tenant", tenant);
            final String principalValue = selectorField("--principal", principal);
            final String routeValue = selectorField("--route", route);
            if (tenantValue == null && principalValue == null && routeValue == null)
            {
                throw AdminClient.usage("say whose requests it exempts: --tenant T, --principal P (with --tenant) and/or --route R");
            }
            if (principalValue != null && tenantValue == null)
            {
                throw AdminClient.usage("--principal needs --tenant: principals are unique only within their tenant");
            }
            if (owner.isBlank())
            {
                throw AdminClient.usage("--owner is empty: name the team or person answerable for the exemption");
            }
            final String why = AdminClient.reason(reason);
            final Instant end = expiry(expiresIn, expiresAt, Instant.now());
            final Exemption.Builder exemption = Exemption.newBuilder()
                .setId(exemptionId)
                .setOwner(owner.strip())
                .setReason(why)
                .setExpiresAt(timestamp(end));
            if (tenantValue != null)
            {
                exemption.setTenant(tenantValue);
            }
            if (principalValue != null)
            {
                exemption.setPrincipal(principalValue);
            }
            if (routeValue != null)
            {
                exemption.setRoute(routeValue);
            }
            final ChangeResult result = admin.connect(parent.io)
                .call("PUT", path(exemptionId), exemption.build(), ChangeResult.getDefaultInstance());
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                out.println(Output.json(result));
                return 0;
            }
            out.println("exemption " + exemptionId + " in force until " + Output.time(true, exemption.getExpiresAt()));
            return 0;
        }
    }

    /** {@code exempt list}: every active exemption. */
    @Command(
        name = "list",
        mixinStandardHelpOptions = true,
        description = {
            "Lists the exemptions in force: what each covers, until when, who answers for it and how many decisions it bypassed.",
            "BYPASSED is as of the leader's last tick (about once a second). --json prints the ExemptionList."},
        sortOptions = false)
    static final class ListExemptions implements Callable<Integer>
    {
        @ParentCommand
        ExemptCommand parent;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final ExemptionList list = admin.connect(parent.io).call("GET", "/v1/exemptions", null, ExemptionList.getDefaultInstance());
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                out.println(Output.json(list));
                return 0;
            }
            if (list.getExemptionsCount() == 0)
            {
                out.println("no active exemptions");
                return 0;
            }
            final List<List<String>> rows = new ArrayList<>();
            for (final Exemption exemption : list.getExemptionsList())
            {
                rows.add(List.of(exemption.getId(), exemption.getTenant(), exemption.getPrincipal(), exemption.getRoute(),
                    Output.time(exemption.hasExpiresAt(), exemption.getExpiresAt()), exemption.getOwner(),
                    Output.number(exemption.getBypassed()), exemption.getReason()));
            }
            Output.table(out, List.of("ID", "TENANT", "PRINCIPAL", "ROUTE", "EXPIRES", "OWNER", "BYPASSED", "REASON"), rows);
            return 0;
        }
    }

    /** {@code exempt remove ID --reason R}: ends an exemption before it expires. */
    @Command(
        name = "remove",
        mixinStandardHelpOptions = true,
        description = {
            "Ends an exemption before it expires: the requests it covered spend tokens again.",
            "Prints 'exemption ID removed'; --json the ChangeResult."},
        sortOptions = false)
    static final class Remove implements Callable<Integer>
    {
        @ParentCommand
        ExemptCommand parent;

        @Parameters(index = "0", paramLabel = "ID", description = "The exemption's id (see ./limiter exempt list).")
        String id;

        @Option(names = "--reason", required = true, paramLabel = "R", description = "Why (the audit log keeps it).")
        String reason;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final String exemptionId = id(id);
            final String why = AdminClient.reason(reason);
            final ChangeResult result = admin.connect(parent.io)
                .call("DELETE", path(exemptionId) + "?reason=" + AdminClient.encode(why), null, ChangeResult.getDefaultInstance());
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                out.println(Output.json(result));
                return 0;
            }
            out.println("exemption " + exemptionId + " removed");
            return 0;
        }
    }
}
