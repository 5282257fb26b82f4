package dev.limiter.cli;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.protocol.policy.RollbackRequest;
import dev.limiter.protocol.policy.Rollout;
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
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code ./limiter policy put|get|list|history|rollout|rollback|delete}: reads and changes the cluster's
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
        PolicyCommand.History.class,
        PolicyCommand.RolloutStep.class,
        PolicyCommand.Rollback.class,
        PolicyCommand.Delete.class,
        HelpCommand.class},
    sortOptions = false)
public final class PolicyCommand implements Callable<Integer>
{
    private static final String PREFIX = "limiter policy: ";

    private final AdminClient.Io io;

    private PolicyCommand(final AdminClient.Io io)
    {
        this.io = io;
    }

    @Override
    public Integer call() throws AdminClient.Failure
    {
        throw AdminClient.usage("say what to do: put, get, list, history, rollout, rollback or delete (see ./limiter policy --help)");
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
        final AdminClient.Io io = new AdminClient.Io(out, err, env, workDir);
        return AdminClient.execute(new PolicyCommand(io), PREFIX, args, io);
    }

    public static void main(final String[] args)
    {
        System.exit(run(args, System.out, System.err, System.getenv(), Path.of("")));
    }

    private static String id(final String id) throws AdminClient.Failure
    {
        return AdminClient.required(id, "the policy id is empty");
    }

    private static String reason(final String reason) throws AdminClient.Failure
    {
        return AdminClient.reason(reason);
    }

    private static String path(final String id)
    {
        return "/v1/policies/" + AdminClient.encode(id);
    }

    /** Prints a change's JSON, or the one line saying what is in force now. */
    private static void printChange(final PrintStream out, final boolean json, final ChangeResult result, final String requestedId)
    {
        if (json)
        {
            out.println(AdminClient.json(result));
            return;
        }
        final PolicyVersion made = result.getVersion();
        final Policy policy = made.getPolicy();
        final String id = policy.getId().isEmpty() ? requestedId : policy.getId();
        final String version = AdminClient.number(policy.getVersion());
        final String set = "set version " + AdminClient.number(result.getSetVersion());
        if (made.getDeleted())
        {
            out.println("policy " + id + " deleted at version " + version + " (" + set + ")");
        }
        else if (policy.hasEffectiveFrom() &&
            Instant.ofEpochSecond(policy.getEffectiveFrom().getSeconds(), policy.getEffectiveFrom().getNanos()).isAfter(Instant.now()))
        {
            out.println("policy " + id + " version " + version + " accepted, in force from " +
                AdminClient.time(true, policy.getEffectiveFrom()) + " (" + set + ")");
        }
        else if (made.getRolledBackFrom() != 0)
        {
            out.println("policy " + id + " version " + version + " in force, a copy of version " +
                AdminClient.number(made.getRolledBackFrom()) + " (" + set + ")");
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
    private static Policy.Builder readPolicy(final Path path, final Path shown, final String command) throws AdminClient.Failure
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
            final String why = AdminClient.oneLine(e.getMessage());
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
                policy.setReason(reason(reason));
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
                out.println(AdminClient.json(policy));
                return 0;
            }
            AdminClient.table(out, null, List.of(
                List.of("ID", policy.getId()),
                List.of("VERSION", AdminClient.number(policy.getVersion())),
                List.of("OWNER", policy.getOwner()),
                List.of("RATE", AdminClient.rate(policy)),
                List.of("BURST", AdminClient.burst(policy)),
                List.of("SCOPE", AdminClient.scope(policy)),
                List.of("MODE", AdminClient.mode(policy)),
                List.of("CONSISTENCY", AdminClient.consistency(policy)),
                List.of("FAILURE MODE", AdminClient.named(policy.getFailureMode(), policy.getFailureModeValue(), "OPEN")),
                List.of("ALGORITHM", AdminClient.named(policy.getAlgorithm(), policy.getAlgorithmValue(), "TOKEN_BUCKET")),
                List.of("PRIORITY", Integer.toString(policy.getPriority())),
                List.of("SELECTOR", AdminClient.selector(policy.getSelector())),
                List.of("EFFECTIVE FROM", AdminClient.time(policy.hasEffectiveFrom(), policy.getEffectiveFrom())),
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
                out.println(AdminClient.json(set));
                return 0;
            }
            final List<List<String>> rows = new ArrayList<>();
            for (final Policy policy : set.getPoliciesList())
            {
                rows.add(row(policy, AdminClient.selector(policy.getSelector()) + rollout(policy)));
            }
            if (set.hasDefaultPolicy())
            {
                rows.add(row(set.getDefaultPolicy(), "(default: requests no policy matches)" + rollout(set.getDefaultPolicy())));
            }
            AdminClient.table(out, List.of("ID", "VERSION", "OWNER", "RATE", "BURST", "SCOPE", "MODE", "CONSISTENCY", "SELECTOR"), rows);
            // Counted as the node counts them (/health, limiter_policies): the default included.
            final int count = set.getPoliciesCount() + (set.hasDefaultPolicy() ? 1 : 0);
            out.println("policy set version " + AdminClient.number(set.getVersion()) + ", " + count +
                (count == 1 ? " policy" : " policies") + (set.hasDefaultPolicy() ? " (the default included)" : ""));
            return 0;
        }

        private static List<String> row(final Policy policy, final String selector)
        {
            return List.of(policy.getId(), AdminClient.number(policy.getVersion()), policy.getOwner(), AdminClient.rate(policy),
                AdminClient.burst(policy), AdminClient.scope(policy), AdminClient.mode(policy), AdminClient.consistency(policy), selector);
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

    /** {@code policy history ID}: every version of one policy. */
    @Command(
        name = "history",
        mixinStandardHelpOptions = true,
        description = {"Lists every version of one policy: who made it, when and why.",
            "Oldest first; NOTE marks rollbacks, deletions, the version enforced (current) and one in shadow. --json prints the PolicyHistory."},
        sortOptions = false)
    static final class History implements Callable<Integer>
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
            final PolicyHistory history = admin.connect(parent.io)
                .call("GET", path(policyId) + "/history", null, PolicyHistory.getDefaultInstance());
            final PrintStream out = parent.io.out();
            if (admin.json)
            {
                out.println(AdminClient.json(history));
                return 0;
            }
            final List<List<String>> rows = new ArrayList<>();
            final int count = history.getVersionsCount();
            // Enforced: the newest ENFORCE version after the last deletion; a newest SHADOW version runs beside it.
            // Scheduled versions count once their time has passed (by this machine's clock); blocked ones never.
            final long now = System.currentTimeMillis();
            int enforced = -1;
            for (int i = count - 1; i >= 0; i--)
            {
                final PolicyVersion candidate = history.getVersions(i);
                if (candidate.getBlocked() || (candidate.getPolicy().hasEffectiveFrom() &&
                    Timestamps.toMillis(candidate.getPolicy().getEffectiveFrom()) > now))
                {
                    continue;
                }
                if (candidate.getDeleted())
                {
                    break;
                }
                if (candidate.getPolicy().getMode() != Mode.SHADOW)
                {
                    enforced = i;
                    break;
                }
            }
            for (int i = 0; i < count; i++)
            {
                final PolicyVersion version = history.getVersions(i);
                final Policy policy = version.getPolicy();
                final List<String> notes = new ArrayList<>();
                if (version.getRolledBackFrom() != 0)
                {
                    notes.add("rollback of v" + AdminClient.number(version.getRolledBackFrom()));
                }
                if (policy.hasEffectiveFrom())
                {
                    notes.add("from " + AdminClient.time(true, policy.getEffectiveFrom()));
                }
                if (version.getBlocked())
                {
                    notes.add("blocked");
                }
                if (version.getDeleted())
                {
                    notes.add("deleted");
                }
                else if (i == enforced)
                {
                    notes.add("current");
                }
                else if (i == count - 1 && policy.getMode() == Mode.SHADOW)
                {
                    notes.add("shadow");
                }
                rows.add(List.of(AdminClient.number(policy.getVersion()), AdminClient.time(version.hasCreatedAt(), version.getCreatedAt()),
                    version.getActor(), policy.getOwner(), version.getDeleted() ? "-" : AdminClient.rate(policy),
                    version.getDeleted() ? "-" : AdminClient.burst(policy), String.join(", ", notes), policy.getReason()));
            }
            AdminClient.table(out, List.of("VERSION", "CREATED", "ACTOR", "OWNER", "RATE", "BURST", "NOTE", "REASON"), rows);
            return 0;
        }
    }

    /**
     * {@code policy rollout ID --percent N ...}: the next step of a staged rollout, as a new version
     * that only the listed tenants and a stable share of all tenants get.
     */
    @Command(
        name = "rollout",
        mixinStandardHelpOptions = true,
        description = {
            "Rolls a version of a policy out to some tenants first, one step at a time.",
            "Each step makes a new version: the listed tenants (--tenant) and a stable N%% of all tenants are decided by it; "
                + "the others stay on the version enforced before the rollout began (with --others shadow they are also "
                + "evaluated against the new one in shadow: counted, never denied).",
            "The first step takes the new limits from --file F (one Policy in protobuf JSON, as put takes; any rollout in it is "
                + "replaced by these options). Later steps leave out --file: they reuse the newest version's limits and selector, "
                + "and its tenants and --others unless given again. --percent 100 without --tenant finishes the rollout: "
                + "a version in force for every tenant.",
            "Prints e.g. 'policy orders-api version 5 rolling out: 25%% of tenants + 2 listed (others on version 3, in shadow)'; "
                + "--json the ChangeResult."},
        sortOptions = false)
    static final class RolloutStep implements Callable<Integer>
    {
        @ParentCommand
        PolicyCommand parent;

        @Parameters(index = "0", paramLabel = "ID", description = "The policy's id.")
        String id;

        @Option(names = "--percent", required = true, paramLabel = "N",
            description = "Share of all tenants (0-100, stable per tenant) the new version decides for; 100 without --tenant finishes.")
        int percent;

        @Option(names = "--tenant", paramLabel = "T",
            description = "A tenant the new version decides for regardless of --percent (repeatable; default: the previous step's).")
        List<String> tenants;

        @Option(names = "--others", paramLabel = "shadow|previous",
            description = "The other tenants: on the previous version only, or also evaluated against the new one in shadow "
                + "(default: the previous step's setting, else previous).")
        String others;

        @Option(names = "--reason", required = true, paramLabel = "R", description = "Why (the audit log keeps it).")
        String reason;

        @Option(names = "--file", paramLabel = "F",
            description = "The new version's policy, as JSON (its id must be ID or absent); needed to start a rollout.")
        Path file;

        @Option(names = "--owner", paramLabel = "O", description = "Team or person answerable for it (default: the file's, else the previous step's).")
        String owner;

        @Mixin
        AdminClient.Options admin;

        @Override
        public Integer call() throws AdminClient.Failure
        {
            // Everything the options alone can get wrong is rejected before any call.
            final String policyId = id(id);
            if (percent < 0 || percent > 100)
            {
                throw AdminClient.usage("--percent must be 0 to 100, was " + percent);
            }
            final String why = reason(reason);
            final Boolean othersInShadow = others(others);
            final Set<String> listed = new LinkedHashSet<>();
            for (final String tenant : tenants == null ? List.<String>of() : tenants)
            {
                if (tenant.isBlank())
                {
                    throw AdminClient.usage("--tenant is empty: name a tenant (or leave --tenant out)");
                }
                listed.add(tenant.strip());
            }
            final Policy.Builder policy;
            if (file != null)
            {
                policy = readPolicy(parent.io.workDir().resolve(file), file, "rollout");
                if (!policy.getId().isBlank() && !policy.getId().strip().equals(policyId))
                {
                    throw AdminClient.usage(file + " holds policy '" + policy.getId() + "', not '" + policyId +
                        "': give the file of " + policyId + " (or one without \"id\")");
                }
                policy.setId(policyId);
            }
            else
            {
                policy = null;
            }

            final AdminClient client = admin.connect(parent.io);
            final Rollout previous;
            final Policy.Builder body;
            final long basedOn;
            if (policy != null)
            {
                body = policy;
                previous = null;
                basedOn = policy.getVersion();
            }
            else
            {
                final Policy newest = newest(client, policyId);
                previous = newest.getRollout();
                basedOn = newest.getVersion();
                // The next step of the same version: its limits and selector; it takes effect now.
                body = newest.toBuilder().setId(policyId).clearEffectiveFrom();
            }
            body.clearVersion().clearRollout().setReason(why);
            if (basedOn != 0)
            {
                // The version this step was read from: the node refuses it (409) if the policy changed since.
                body.setVersion(basedOn);
            }
            if (owner != null)
            {
                body.setOwner(owner.strip());
            }
            final boolean complete = percent == 100 && listed.isEmpty();
            if (!complete)
            {
                // No fallback: the cluster sets it to the version enforced before the rollout began.
                body.setRollout(Rollout.newBuilder()
                    .addAllTenants(listed.isEmpty() && previous != null ? previous.getTenantsList() : listed)
                    .setPercent(percent)
                    .setOthersInShadow(othersInShadow != null ? othersInShadow : previous != null && previous.getOthersInShadow()));
            }
            final ChangeResult result = client.call("PUT", path(policyId), body.build(), ChangeResult.getDefaultInstance());
            print(parent.io.out(), result, policyId, complete, body.getRollout());
            return 0;
        }

        /** --others as "in shadow?", null when not given. */
        private static Boolean others(final String others) throws AdminClient.Failure
        {
            if (others == null)
            {
                return null;
            }
            return switch (others.strip().toLowerCase(Locale.ROOT))
            {
                case "shadow" -> true;
                case "previous" -> false;
                default -> throw AdminClient.usage("--others must be shadow or previous, was '" + others + "'");
            };
        }

        /** The newest version of the policy that is not a deletion; it must be a rollout step. */
        private static Policy newest(final AdminClient client, final String policyId) throws AdminClient.Failure
        {
            final PolicyHistory history = client.call("GET", path(policyId) + "/history", null, PolicyHistory.getDefaultInstance());
            for (int i = history.getVersionsCount() - 1; i >= 0; i--)
            {
                final PolicyVersion version = history.getVersions(i);
                if (version.getDeleted())
                {
                    continue;
                }
                if (!version.getPolicy().hasRollout())
                {
                    throw AdminClient.failed("policy " + policyId + " is not being rolled out (its newest version, " +
                        AdminClient.number(version.getPolicy().getVersion()) + ", has no rollout): start a rollout with --file F");
                }
                return version.getPolicy();
            }
            throw AdminClient.failed("policy " + policyId + " has no version to roll out: start a rollout with --file F");
        }

        private void print(final PrintStream out, final ChangeResult result, final String requestedId, final boolean complete,
                           final Rollout sent)
        {
            if (admin.json)
            {
                out.println(AdminClient.json(result));
                return;
            }
            final Policy made = result.getVersion().getPolicy();
            final String prefix = "policy " + (made.getId().isEmpty() ? requestedId : made.getId()) + " version " +
                AdminClient.number(made.getVersion());
            if (complete)
            {
                out.println(prefix + " in force for every tenant (rollout complete)");
                return;
            }
            // What the cluster recorded; what was sent if the answer leaves the rollout out.
            final Rollout rollout = made.hasRollout() ? made.getRollout() : sent;
            final int listed = rollout.getTenantsCount();
            final List<String> others = new ArrayList<>();
            if (rollout.hasFallback())
            {
                others.add("others on version " + AdminClient.number(rollout.getFallback().getVersion()));
            }
            if (rollout.getOthersInShadow())
            {
                others.add(others.isEmpty() ? "others in shadow" : "in shadow");
            }
            out.println(prefix + " rolling out: " + Integer.toUnsignedString(rollout.getPercent()) + "% of tenants" +
                (listed == 0 ? "" : " + " + listed + " listed") + (others.isEmpty() ? "" : " (" + String.join(", ", others) + ")"));
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
            final RollbackRequest request = RollbackRequest.newBuilder().setToVersion(toVersion).setReason(reason(reason)).build();
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
            final String why = reason(reason);
            final ChangeResult result = admin.connect(parent.io)
                .call("DELETE", path(policyId) + "?reason=" + AdminClient.encode(why), null, ChangeResult.getDefaultInstance());
            printChange(parent.io.out(), admin.json, result, policyId);
            return 0;
        }
    }
}
