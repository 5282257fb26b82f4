package dev.limiter.cli;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.JsonHints;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.protocol.policy.RollbackRequest;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code ./limiter policy put|get|list|history|compare|rollout|rollback|delete|import}: reads and changes the cluster's
 * policies through the admin HTTP API of its nodes. Every change names who made it and why.
 */
@Command(
    name = "policy",
    mixinStandardHelpOptions = true,
    description = {
        "Shows and changes the cluster's policies through the nodes' admin HTTP API (/v1/policies).",
        "Changes go to the leader: a node that is not the leader passes the call to the next --admin address.",
        "Every change makes a new version; ./limiter audit shows who made it, when and why.",
        "The admin token comes from --token, $LIMITER_ADMIN_TOKEN, data/admin-token or data/node/admin-token.",
        "Exit status: 0 done, 1 the API refused or no node answered, 2 bad input (nothing was sent)."},
    subcommands = {
        PolicyCommand.Put.class,
        PolicyCommand.Get.class,
        PolicyCommand.ListPolicies.class,
        PolicyHistoryCommand.class,
        PolicyCompareCommand.class,
        PolicyRolloutCommand.class,
        PolicyCommand.Rollback.class,
        PolicyCommand.Delete.class,
        PolicyImportCommand.class,
        HelpCommand.class},
    sortOptions = false)
public final class PolicyCommand extends AdminCommand.Group
{
    private static final String PREFIX = "limiter policy: ";

    private PolicyCommand(final AdminClient.Io io)
    {
        super(io,
            "say what to do: put, get, list, history, compare, rollout, rollback, delete or import (see ./limiter policy --help)");
    }

    /**
     * Runs {@code ./limiter policy} with these arguments.
     *
     * @param out     where answers go
     * @param err     where the one-line failure report goes
     * @param env     the environment (for LIMITER_ADMIN_TOKEN)
     * @param workDir the directory data/admin-token and relative --file paths are read from
     * @return the exit status: 0 done, 1 the API refused or no node answered, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err, final Map<String, String> env,
                          final Path workDir)
    {
        return AdminCommand.run(PolicyCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(PolicyCommand::run, args);
    }

    static String id(final String id) throws AdminClient.Failure
    {
        return AdminClient.required(id, "the policy id is empty");
    }


    static String path(final String id)
    {
        return "/v1/policies/" + AdminClient.encode(id);
    }

    /** Prints a change's JSON, or the one line saying what is in force now. */
    static void printChange(final PrintStream out, final boolean json, final ChangeResult result, final String requestedId)
    {
        if (json)
        {
            out.println(Output.json(result));
            return;
        }
        final PolicyVersion made = result.getVersion();
        final Policy policy = made.getPolicy();
        final String id = policy.getId().isEmpty() ? requestedId : policy.getId();
        final String version = Output.number(policy.getVersion());
        final String set = "set version " + Output.number(result.getSetVersion());
        if (made.getDeleted())
        {
            out.println("policy " + id + " deleted at version " + version + " (" + set + ")");
        }
        else if (policy.hasEffectiveFrom() &&
            Instant.ofEpochSecond(policy.getEffectiveFrom().getSeconds(), policy.getEffectiveFrom().getNanos()).isAfter(Instant.now()))
        {
            out.println("policy " + id + " version " + version + " accepted, in force from " +
                Output.time(true, policy.getEffectiveFrom()) + " (" + set + ")");
        }
        else if (made.getRolledBackFrom() != 0)
        {
            out.println("policy " + id + " version " + version + " in force, a copy of version " +
                Output.number(made.getRolledBackFrom()) + " (" + set + ")");
        }
        else
        {
            out.println("policy " + id + " version " + version + " in force (" + set + ")");
        }
    }

    /**
     * One Policy from a JSON file, parsed strictly (an unknown field in a file is most likely a typo).
     *
     * @param path    the file to read
     * @param shown   the file as the operator named it (in messages)
     * @param command the subcommand reading it (in messages)
     */
    static Policy.Builder readPolicy(final Path path, final Path shown, final String command) throws AdminClient.Failure
    {
        final String text;
        try
        {
            text = Files.readString(path);
        }
        catch (final NoSuchFileException e)
        {
            throw AdminClient.usage("cannot read " + shown + ": no such file");
        }
        catch (final IOException e)
        {
            throw AdminClient.usage("cannot read " + shown + ": " + e);
        }
        final Policy.Builder policy = Policy.newBuilder();
        try
        {
            // Strict, unlike answers: an unknown field in a file is most likely a typo ("brust").
            JsonFormat.parser().merge(text, policy);
        }
        catch (final InvalidProtocolBufferException | RuntimeException e)
        {
            final String why = Output.oneLine(JsonHints.explain(e.getMessage()));
            throw AdminClient.usage(shown + " is not one policy in protobuf JSON: " + why +
                (why.contains("policies") ? " (that looks like a policy set: " + command + " takes one policy)" : ""));
        }
        return policy;
    }

    /** {@code policy put --file F}: creates or updates one policy. */
    @Command(
        name = "put",
        mixinStandardHelpOptions = true,
        description = {
            "Creates or updates one policy from a JSON file.",
            "F holds one Policy in protobuf JSON with its id inside (the format ./limiter policy get ID --json prints). "
                + "The cluster gives it the next version number. A reason is required: --reason, or \"reason\" in the file.",
            "Prints e.g. 'policy orders-api version 3 in force (set version 7)'; --json the ChangeResult."},
        sortOptions = false)
    static final class Put implements Callable<Integer>
    {
        @ParentCommand
        PolicyCommand parent;

        @Option(names = "--file", required = true, paramLabel = "F", description = "The policy, as JSON.")
        Path file;

        @Option(names = "--owner", paramLabel = "O", description = "Team or person answerable for it (overrides the file's).")
        String owner;

        @Option(names = "--reason", paramLabel = "R", description = "Why this version (overrides the file's).")
        String reason;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final Policy.Builder policy = readPolicy(parent.io.workDir().resolve(file), file, "put");
            if (policy.getId().isBlank())
            {
                throw AdminClient.usage(file + " has no \"id\": put needs the policy's id inside the file");
            }
            if (owner != null)
            {
                policy.setOwner(owner.strip());
            }
            if (reason != null)
            {
                policy.setReason(AdminClient.reason(reason));
            }
            if (policy.getReason().isBlank())
            {
                throw AdminClient.usage("no reason given: pass --reason R (or set \"reason\" in " + file + "); the audit log keeps it");
            }
            final AdminClient client = admin.connect(parent.io);
            final ChangeResult result = client.call("PUT", path(policy.getId()), policy.build(), ChangeResult.getDefaultInstance());
            printChange(parent.io.out(), admin.json, result, policy.getId());
            return 0;
        }
    }

    /** {@code policy get ID}: one policy as in force now. */
    @Command(
        name = "get",
        mixinStandardHelpOptions = true,
        description = {"Shows the version of one policy in force now.", "--json prints the Policy (which put --file takes)."},
        sortOptions = false)
    static final class Get implements Callable<Integer>
    {
        @ParentCommand
        PolicyCommand parent;

        @Parameters(index = "0", paramLabel = "ID", description = "The policy's id.")
        String id;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final String policyId = id(id);
            final Policy policy = admin.connect(parent.io).call("GET", path(policyId), null, Policy.getDefaultInstance());
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                out.println(Output.json(policy));
                return 0;
            }
            Output.table(out, null, List.of(
                List.of("ID", policy.getId()),
                List.of("VERSION", Output.number(policy.getVersion())),
                List.of("OWNER", policy.getOwner()),
                List.of("RATE", Output.rate(policy)),
                List.of("BURST", Output.burst(policy)),
                List.of("SCOPE", Output.scope(policy)),
                List.of("MODE", Output.mode(policy)),
                List.of("CONSISTENCY", Output.consistency(policy)),
                List.of("FAILURE MODE", Output.named(policy.getFailureMode(), policy.getFailureModeValue(), "OPEN")),
                List.of("ALGORITHM", Output.named(policy.getAlgorithm(), policy.getAlgorithmValue(), "TOKEN_BUCKET")),
                List.of("MORE LIMITS", Output.moreLimits(policy)),
                List.of("EXCESS", Output.excess(policy)),
                List.of("PRIORITY", Integer.toString(policy.getPriority())),
                List.of("SELECTOR", Output.selector(policy.getSelector())),
                List.of("EFFECTIVE FROM", Output.time(policy.hasEffectiveFrom(), policy.getEffectiveFrom())),
                List.of("REASON", policy.getReason())));
            return 0;
        }
    }

    /** {@code policy list}: every policy in force, and the default. */
    @Command(
        name = "list",
        mixinStandardHelpOptions = true,
        description = {
            "Lists the policies in force, and the default.",
            "The default applies to requests no policy matches; the last line gives the policy-set version. "
                + "A version being rolled out shows 'rollout=N%%' (and '+K tenants' listed) after its selector. --json prints the PolicySet."},
        sortOptions = false)
    static final class ListPolicies implements Callable<Integer>
    {
        @ParentCommand
        PolicyCommand parent;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final PolicySet set = admin.connect(parent.io).call("GET", "/v1/policies", null, PolicySet.getDefaultInstance());
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                out.println(Output.json(set));
                return 0;
            }
            final List<List<String>> rows = new ArrayList<>();
            for (final Policy policy : set.getPoliciesList())
            {
                rows.add(row(policy, Output.selector(policy.getSelector()) + rollout(policy)));
            }
            if (set.hasDefaultPolicy())
            {
                rows.add(row(set.getDefaultPolicy(), "(default: requests no policy matches)" + rollout(set.getDefaultPolicy())));
            }
            Output.table(out, List.of("ID", "VERSION", "OWNER", "RATE", "BURST", "SCOPE", "MODE", "CONSISTENCY", "SELECTOR"), rows);
            // Counted as the node counts them (/health, limiter_policies): the default included.
            final int count = set.getPoliciesCount() + (set.hasDefaultPolicy() ? 1 : 0);
            out.println("policy set version " + Output.number(set.getVersion()) + ", " + count +
                (count == 1 ? " policy" : " policies") + (set.hasDefaultPolicy() ? " (the default included)" : ""));
            return 0;
        }

        private static List<String> row(final Policy policy, final String selector)
        {
            return List.of(policy.getId(), Output.number(policy.getVersion()), policy.getOwner(), Output.rate(policy),
                Output.burst(policy), Output.scope(policy), Output.mode(policy), Output.consistency(policy), selector);
        }

        /** " rollout=25% +2 tenants" for a version being rolled out, else nothing. */
        private static String rollout(final Policy policy)
        {
            if (!policy.hasRollout())
            {
                return "";
            }
            final int tenants = policy.getRollout().getTenantsCount();
            return " rollout=" + Integer.toUnsignedString(policy.getRollout().getPercent()) + "%" +
                (tenants == 0 ? "" : " +" + tenants + (tenants == 1 ? " tenant" : " tenants"));
        }
    }

    /** {@code policy rollback ID --to N --reason R}: a new version equal to an old one. */
    @Command(
        name = "rollback",
        mixinStandardHelpOptions = true,
        description = {
            "Puts an earlier version of a policy back in force.",
            "Makes a new version of policy ID equal to its version N; history is never rewritten (see ./limiter policy history ID). "
                + "--json prints the ChangeResult."},
        sortOptions = false)
    static final class Rollback implements Callable<Integer>
    {
        @ParentCommand
        PolicyCommand parent;

        @Parameters(index = "0", paramLabel = "ID", description = "The policy's id.")
        String id;

        @Option(names = "--to", required = true, paramLabel = "N", description = "The version to return to (1 or more).")
        long toVersion;

        @Option(names = "--reason", required = true, paramLabel = "R", description = "Why (the audit log keeps it).")
        String reason;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final String policyId = id(id);
            if (toVersion < 1)
            {
                throw AdminClient.usage("--to must be a version number, 1 or more (was " + toVersion + "; see ./limiter policy history " + policyId + ")");
            }
            final RollbackRequest request = RollbackRequest.newBuilder().setToVersion(toVersion).setReason(AdminClient.reason(reason)).build();
            final ChangeResult result = admin.connect(parent.io)
                .call("POST", path(policyId) + "/rollback", request, ChangeResult.getDefaultInstance());
            printChange(parent.io.out(), admin.json, result, policyId);
            return 0;
        }
    }

    /** {@code policy delete ID --reason R}: takes a policy out of force (its history stays). */
    @Command(
        name = "delete",
        mixinStandardHelpOptions = true,
        description = {
            "Takes a policy out of force.",
            "Requests it matched fall to the next matching policy or the default. Its history stays, ending in a tombstone version. "
                + "--json prints the ChangeResult."},
        sortOptions = false)
    static final class Delete implements Callable<Integer>
    {
        @ParentCommand
        PolicyCommand parent;

        @Parameters(index = "0", paramLabel = "ID", description = "The policy's id.")
        String id;

        @Option(names = "--reason", required = true, paramLabel = "R", description = "Why (the audit log keeps it).")
        String reason;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            final String policyId = id(id);
            final String why = AdminClient.reason(reason);
            final ChangeResult result = admin.connect(parent.io)
                .call("DELETE", path(policyId) + "?reason=" + AdminClient.encode(why), null, ChangeResult.getDefaultInstance());
            printChange(parent.io.out(), admin.json, result, policyId);
            return 0;
        }
    }
}
