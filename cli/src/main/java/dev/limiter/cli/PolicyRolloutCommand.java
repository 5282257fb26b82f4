package dev.limiter.cli;

import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.PolicyVersion;
import dev.limiter.protocol.policy.Rollout;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;

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
final class PolicyRolloutCommand implements Callable<Integer>
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
        final String policyId = PolicyCommand.id(id);
        if (percent < 0 || percent > 100)
        {
            throw AdminClient.usage("--percent must be 0 to 100, was " + percent);
        }
        final String why = AdminClient.reason(reason);
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
            policy = PolicyCommand.readPolicy(parent.io.workDir().resolve(file), file, "rollout");
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
        final ChangeResult result = client.call("PUT", PolicyCommand.path(policyId), body.build(), ChangeResult.getDefaultInstance());
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
        final PolicyHistory history = client.call("GET", PolicyCommand.path(policyId) + "/history", null, PolicyHistory.getDefaultInstance());
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
                    Output.number(version.getPolicy().getVersion()) + ", has no rollout): start a rollout with --file F");
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
            out.println(Output.json(result));
            return;
        }
        final Policy made = result.getVersion().getPolicy();
        final String prefix = "policy " + (made.getId().isEmpty() ? requestedId : made.getId()) + " version " +
            Output.number(made.getVersion());
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
            others.add("others on version " + Output.number(rollout.getFallback().getVersion()));
        }
        if (rollout.getOthersInShadow())
        {
            others.add(others.isEmpty() ? "others in shadow" : "in shadow");
        }
        out.println(prefix + " rolling out: " + Integer.toUnsignedString(rollout.getPercent()) + "% of tenants" +
            (listed == 0 ? "" : " + " + listed + " listed") + (others.isEmpty() ? "" : " (" + String.join(", ", others) + ")"));
    }
}
