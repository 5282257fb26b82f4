package dev.limiter.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.policy.Appeal;
import dev.limiter.protocol.policy.ChangeResult;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code ./limiter appeal add|list}: appeals of rejected decisions as false rejections. {@code add}
 * finds the decision on the members by its id, then sends the appeal to the leader, which puts it
 * through the control log and the audit trail; {@code list} shows the appeals the cluster holds.
 */
@Command(
    name = "appeal",
    mixinStandardHelpOptions = true,
    description = {
        "Appeals a rejected decision as a false rejection, by the id its Limiter-Decision-Id header gave,",
        "and lists appeals.",
        "An appeal names the policy and version that refused the request; the cluster counts it in",
        "limiter_false_rejections_total{policy} on every member and ./limiter audit shows it (APPEAL_ADDED).",
        "The admin token comes from --token, $LIMITER_ADMIN_TOKEN, data/admin-token or data/node/admin-token.",
        "Exit status: 0 done, 1 the API refused or no node answered, 2 bad input (nothing was sent)."},
    subcommands = {AppealCommand.Add.class, AppealCommand.ListAppeals.class, HelpCommand.class},
    sortOptions = false)
public final class AppealCommand extends AdminCommand.Group
{
    private static final String PREFIX = "limiter appeal: ";

    private AppealCommand(final AdminClient.Io io)
    {
        super(io, "say what to do: add or list (see ./limiter appeal --help)");
    }

    /**
     * Runs {@code ./limiter appeal} with these arguments.
     *
     * @return the exit status: 0 done, 1 the API refused or no node answered, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err,
        final Map<String, String> env, final Path workDir)
    {
        return AdminCommand.run(AppealCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(AppealCommand::run, args);
    }

    /** {@code appeal add ID --owner O --reason R}: one appeal. */
    @Command(
        name = "add",
        description = {
            "Appeals one rejected decision. The decision is looked up on every member (the node that decided it",
            "sampled it, with its policy, version, tenant and route); the appeal then goes to the leader.",
            "A decision no member sampled (sampled out, overwritten, or its node restarted) is appealed only with",
            "--policy ID --version N. A decision is appealed once.",
            "  ./limiter appeal add 3f9a0c1be4d27a10-2 --owner payments --reason \"contracted burst\"",
            "Prints e.g. 'appeal of decision 3f9a0c1be4d27a10-2 recorded: policy orders-api v3, tenant acme'."},
        sortOptions = false)
    static final class Add implements Callable<Integer>
    {
        @ParentCommand
        AppealCommand parent;

        @Parameters(index = "0", paramLabel = "DECISION_ID",
            description = "The decision's id, e.g. 3f9a0c1be4d27a10-2.")
        String id;

        /** Not the standard options: --version here names a policy version, not this build's. */
        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help message and exit.")
        boolean help;

        @Option(names = "--owner", required = true, paramLabel = "O",
            description = "Team or person answerable for the appeal.")
        String owner;

        @Option(names = "--reason", required = true, paramLabel = "R",
            description = "Why the rejection was false (the audit log keeps it).")
        String reason;

        @Option(names = "--policy", paramLabel = "ID",
            description = "The policy that refused it: only for a decision no member sampled (with --version).")
        String policy;

        @Option(names = "--version", paramLabel = "N",
            description = "That policy's version: only for a decision no member sampled (with --policy).")
        Long version;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final String decision = AdminClient.required(id,
                "the decision id is empty: give the Limiter-Decision-Id value");
            final String problem = DecisionIds.problem(decision);
            if (problem != null)
            {
                throw AdminClient.usage(problem + " (the Limiter-Decision-Id header's value)");
            }
            final String who = AdminClient.required(owner,
                "--owner is empty: name the team or person answerable for the appeal");
            final String why = AdminClient.reason(reason);
            if ((policy == null) != (version == null))
            {
                throw AdminClient.usage("--policy and --version go together: both name the version that refused "
                    + "the decision");
            }
            if (version != null && version < 1)
            {
                throw AdminClient.usage("--version must be 1 or more, was " + version);
            }
            final Appeal.Builder appeal = Appeal.newBuilder().setDecisionId(decision).setOwner(who).setReason(why);
            final JsonObject found = DecisionsCommand.find(admin, parent.io, decision);
            if (found != null)
            {
                final String foundPolicy = DecisionsCommand.text(found, "policy");
                final long foundVersion = found.get("version").getAsLong();
                if (policy != null && (!policy.strip().equals(foundPolicy) || version != foundVersion))
                {
                    throw AdminClient.usage("decision " + decision + " was refused by policy " + foundPolicy + " v" +
                        foundVersion + " (node " + DecisionsCommand.text(found, "node") + "), not "
                            + policy.strip() + " v" +
                        version + ": leave --policy and --version out");
                }
                appeal.setPolicy(foundPolicy).setVersion(foundVersion)
                    .setTenant(DecisionsCommand.text(found, "tenant")).setRoute(DecisionsCommand.text(found, "route"));
            }
            else if (policy == null)
            {
                throw AdminClient.failed("no member sampled decision " + decision + " (it may have been sampled out, " +
                    "overwritten, or decided by a node since restarted); to appeal it anyway give the policy and " +
                    "version that refused it: --policy ID --version N; nothing was sent");
            }
            else
            {
                appeal.setPolicy(policy.strip()).setVersion(version);
            }
            final ChangeResult result = admin.connect(parent.io).call("POST", "/v1/appeals", appeal.build(),
                ChangeResult.getDefaultInstance());
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                out.println(Output.json(result));
                return 0;
            }
            out.println("appeal of decision " + DecisionIds.canonical(decision) + " recorded: policy "
                + appeal.getPolicy() + " v" + appeal.getVersion() + (appeal.getTenant().isEmpty() ? ""
                : ", tenant " + appeal.getTenant()) + (appeal.getRoute().isEmpty() ? "" : ", route "
                + appeal.getRoute()) + (found == null ? " (no member had sampled it)" : ""));
            return 0;
        }
    }

    /** {@code appeal list [--since 24h]}: the appeals the cluster holds. */
    @Command(
        name = "list",
        mixinStandardHelpOptions = true,
        description = {
            "Lists the appeals the cluster holds, oldest first (GET /v1/appeals on any member).",
            "  ./limiter appeal list --since 24h",
            "--json prints the API's {\"appeals\":[...]} document."},
        sortOptions = false)
    static final class ListAppeals implements Callable<Integer>
    {
        @ParentCommand
        AppealCommand parent;

        @Option(names = "--since", paramLabel = "WHEN",
            description = "Only appeals from then on: an RFC 3339 time (2026-12-03T09:00:00Z) or how long ago "
                + "(30m, 24h, 2d).")
        String since;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final long from = since == null ? 0 : AuditCommand.since(since, Instant.now()).toEpochMilli();
            final AdminClient client = admin.connect(parent.io);
            final AdminClient.Answer answer = client.get("/v1/appeals?since=" + from);
            if (answer.status() == 404)
            {
                throw AdminClient.failed("no appeals: " + answer.address()
                    + "'s admin API has no /v1/appeals (an older build)");
            }
            if (answer.status() / 100 != 2)
            {
                throw client.refused(answer);
            }
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                out.println(answer.body().strip());
                return 0;
            }
            final JsonObject document;
            try
            {
                document = com.google.gson.JsonParser.parseString(answer.body()).getAsJsonObject();
            }
            catch (final RuntimeException e)
            {
                throw AdminClient.failed("unexpected answer from " + answer.address() + ": not an appeal list");
            }
            final List<List<String>> rows = new ArrayList<>();
            for (final JsonElement element : document.getAsJsonArray("appeals"))
            {
                final JsonObject a = element.getAsJsonObject();
                rows.add(List.of(DecisionsCommand.text(a, "decisionId"),
                    Instant.ofEpochMilli(a.get("atMillis").getAsLong()).toString(), DecisionsCommand.text(a, "policy"),
                    Long.toString(a.get("version").getAsLong()), DecisionsCommand.text(a, "tenant"),
                    DecisionsCommand.text(a, "route"), DecisionsCommand.text(a, "owner"),
                    DecisionsCommand.text(a, "reason")));
            }
            if (rows.isEmpty())
            {
                out.println(since == null ? "no appeals" : "no appeals since " + since);
                return 0;
            }
            Output.table(out, List.of("DECISION", "TIME", "POLICY", "VERSION", "TENANT", "ROUTE", "OWNER", "REASON"),
                rows);
            return 0;
        }
    }
}
