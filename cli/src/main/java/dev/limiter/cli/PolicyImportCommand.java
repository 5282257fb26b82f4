package dev.limiter.cli;

import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;

/**
 * {@code ./limiter policy import --envoy FILE}: envoyproxy/ratelimit configurations to policies.
 * A dry run by default: prints what would be created, updated or left as it is; {@code --apply}
 * makes those changes through the admin API, one version per policy.
 */
@Command(
    name = "import",
    mixinStandardHelpOptions = true,
    description = {
        "Turns envoyproxy/ratelimit YAML configurations (domain, nested descriptors,",
        "rate_limit unit and requests_per_unit, unlimited, name, replaces, shadow_mode)",
        "into policies that select the same descriptors (docs/envoy.md maps every field).",
        "A dry run unless --apply: prints each policy to create or update (with what",
        "changes) and what stays. What cannot be carried over (wildcard values,",
        "quota_mode, ...) is an error naming the field, and nothing is sent then.",
        "--print writes the policies as a policy-set JSON instead, asking no node.",
        "  ./limiter policy import --envoy ratelimit/config.yaml --owner edge-team",
        "  ./limiter policy import --envoy ratelimit/config.yaml --owner edge-team --apply --reason \"move off Redis\""},
    sortOptions = false)
final class PolicyImportCommand implements Callable<Integer>
{
    @ParentCommand
    PolicyCommand parent;

    @Option(names = "--envoy", required = true, paramLabel = "FILE",
        description = "An envoyproxy/ratelimit configuration (YAML, one domain); repeat for several.")
    List<Path> files;

    @Option(names = "--owner", required = true, paramLabel = "O", description = "Team or person answerable for the policies.")
    String owner;

    @Option(names = "--reason", paramLabel = "R",
        description = "Why, as the audit log keeps it (default: which file and descriptor each policy came from).")
    String reason;

    @Option(names = "--apply", description = "Make the changes (default: a dry run).")
    boolean apply;

    @Option(names = "--print", description = "Print the policies as a policy-set JSON (for a policies file); asks no node.")
    boolean print;

    @Mixin
    AdminClient.Options admin;

    @Override
    public Integer call() throws AdminClient.Failure
    {
        if (owner.isBlank())
        {
            throw AdminClient.usage("--owner is empty: name the team or person answerable for the imported policies");
        }
        if (apply && print)
        {
            throw AdminClient.usage("--apply and --print: choose one (--print asks no node, --apply changes the cluster)");
        }
        final String why = reason == null ? null : AdminClient.reason(reason);
        final List<EnvoyConfigImport.Result> results = convert();
        final PrintStream out = parent.io.out();
        final List<String> notes = new ArrayList<>();
        if (print)
        {
            final List<Policy> imported = EnvoyReplaces.resolve(results, null, Map.of(), notes);
            notes.forEach(n -> parent.io.err().println("limiter policy import: note: " + n));
            out.println(Output.json(PolicySet.newBuilder().addAllPolicies(imported).build()));
            return 0;
        }
        final AdminClient client = admin.connect(parent.io);
        final PolicySet current = client.call("GET", "/v1/policies", null, PolicySet.getDefaultInstance());
        // The cluster's policy each file policy updates: its id is kept, and replaces must name it.
        final List<Policy> nows = new ArrayList<>();
        final Map<String, String> storedIds = new HashMap<>();
        for (final EnvoyConfigImport.Result result : results)
        {
            for (final Policy file : result.policies())
            {
                final Policy now = updated(current, file);
                nows.add(now);
                if (now != null)
                {
                    storedIds.put(file.getId(), now.getId());
                }
            }
        }
        final List<Policy> imported = EnvoyReplaces.resolve(results, current, storedIds, notes);
        notes.forEach(n -> parent.io.err().println("limiter policy import: note: " + n));
        final List<Policy> planned = new ArrayList<>();
        final List<Policy> changes = new ArrayList<>();
        final List<String> matched = new ArrayList<>();
        final List<List<String>> rows = new ArrayList<>();
        for (int i = 0; i < imported.size(); i++)
        {
            final Policy file = imported.get(i);
            final Policy now = nows.get(i);
            final Policy policy = now == null ? file : overlay(now, file);
            final String change = now == null ? "create" : differences(now, policy);
            if (now != null)
            {
                matched.add(now.getId());
            }
            planned.add(policy);
            if (!change.isEmpty())
            {
                changes.add(policy);
            }
            rows.add(List.of(change.isEmpty() ? "same" : now == null ? "create" : "update", policy.getId(),
                Output.selector(policy.getSelector()), now == null || change.isEmpty() ? summary(policy) : change));
        }
        final List<String> domains = imported.stream().map(p -> p.getSelector().getEnvoy().getDomain()).distinct().toList();
        for (final Policy policy : current.getPoliciesList())
        {
            if (policy.getSelector().hasEnvoy() && domains.contains(policy.getSelector().getEnvoy().getDomain()) &&
                !matched.contains(policy.getId()))
            {
                rows.add(List.of("keep", policy.getId(), Output.selector(policy.getSelector()),
                    "not in the files: stays (./limiter policy delete " + policy.getId() + " to remove it)"));
            }
        }
        checkAgainst(current, planned, matched);
        Output.table(out, List.of("CHANGE", "ID", "SELECTOR", "WHAT"), rows);
        if (!apply)
        {
            out.println("dry run: nothing changed; " + (changes.isEmpty() ? "the cluster already has these policies" :
                changes.size() == 1 ? "--apply makes this change" : "--apply makes these " + changes.size() + " changes"));
            return 0;
        }
        int done = 0;
        for (final Policy policy : changes)
        {
            final Policy.Builder put = policy.toBuilder();
            if (why != null)
            {
                put.setReason(why);
            }
            try
            {
                final ChangeResult result = client.call("PUT", PolicyCommand.path(policy.getId()), put.build(), ChangeResult.getDefaultInstance());
                PolicyCommand.printChange(out, admin.json, result, policy.getId());
                done++;
            }
            catch (final AdminClient.Failure e)
            {
                parent.io.err().println("limiter policy import: " + done + " of " + changes.size() + " changes made before " +
                    policy.getId() + " was refused");
                throw e;
            }
        }
        out.println(done == 0 ? "nothing to change" : done + (done == 1 ? " policy" : " policies") + " changed");
        return 0;
    }

    /** The cluster's policy for the same descriptors (whatever its id), else the one with the same id, else null. */
    private static Policy updated(final PolicySet current, final Policy file)
    {
        return current.getPoliciesList().stream().filter(p -> sameDescriptors(p, file)).findFirst()
            .or(() -> current.getPoliciesList().stream().filter(p -> p.getId().equals(file.getId()) && sameMode(p, file)).findFirst())
            .orElse(null);
    }

    /** "5/1m, ENFORCE", "unlimited, ENFORCE, replaces a, b" */
    private static String summary(final Policy policy)
    {
        return Output.rate(policy) + ", " + mode(policy) +
            (policy.getReplacesCount() == 0 ? "" : ", replaces " + String.join(", ", policy.getReplacesList()));
    }

    /** Every file's conversion; all problems of all files reported at once (exit 2, nothing sent). */
    private List<EnvoyConfigImport.Result> convert() throws AdminClient.Failure
    {
        final List<EnvoyConfigImport.Result> results = new ArrayList<>();
        final List<Policy> imported = new ArrayList<>();
        final List<String> problems = new ArrayList<>();
        for (final Path file : files)
        {
            final String text;
            try
            {
                text = Files.readString(parent.io.workDir().resolve(file));
            }
            catch (final NoSuchFileException e)
            {
                throw AdminClient.usage("cannot read " + file + ": no such file");
            }
            catch (final IOException e)
            {
                throw AdminClient.usage("cannot read " + file + ": " + e);
            }
            final EnvoyConfigImport.Result result = EnvoyConfigImport.convert(text, file.toString(), owner.strip());
            result.errors().forEach(e -> problems.add(file + ": " + e));
            result.notes().forEach(n -> parent.io.err().println("limiter policy import: note: " + file + ": " + n));
            for (final Policy policy : result.policies())
            {
                if (imported.stream().anyMatch(p -> p.getId().equals(policy.getId())))
                {
                    problems.add(file + ": policy id '" + policy.getId() + "' is also made from an earlier file; " +
                        "give one of the rate limits a distinct name");
                }
            }
            imported.addAll(result.policies());
            results.add(result);
        }
        if (!problems.isEmpty())
        {
            problems.forEach(p -> parent.io.err().println("limiter policy import: " + p));
            throw AdminClient.usage(problems.size() + (problems.size() == 1 ? " problem" : " problems") +
                " in the configuration; nothing was sent");
        }
        return results;
    }

    /** The planned policies beside the cluster's envoy policies they do not replace must still compile. */
    private static void checkAgainst(final PolicySet current, final List<Policy> planned, final List<String> replaced)
        throws AdminClient.Failure
    {
        final PolicySet.Builder merged = PolicySet.newBuilder().addAllPolicies(planned);
        final List<String> seen = new ArrayList<>(replaced);
        for (final Policy policy : current.getPoliciesList())
        {
            if (policy.getSelector().hasEnvoy() && !seen.contains(policy.getId()))
            {
                seen.add(policy.getId());
                merged.addPolicies(policy.toBuilder().clearRollout());
            }
        }
        try
        {
            PolicySetIndex.compile(merged.build(), null);
        }
        catch (final PolicyValidationException e)
        {
            throw AdminClient.usage("with the cluster's policies the imported ones would not hold: " + String.join("; ", e.errors()));
        }
    }

    private static boolean sameDescriptors(final Policy now, final Policy file)
    {
        return now.getSelector().hasEnvoy() && now.getSelector().equals(file.getSelector()) && sameMode(now, file);
    }

    /** Both shadow, or both enforced (a shadow policy and an enforced one may select the same descriptors). */
    private static boolean sameMode(final Policy a, final Policy b)
    {
        return (a.getMode() == Mode.SHADOW) == (b.getMode() == Mode.SHADOW);
    }

    /**
     * An update of a policy the cluster has: what the file says (selector, limit, mode, owner)
     * over what it cannot say and an operator may have set since (consistency, failure mode,
     * emergency budget, extra limits, lease TTL, token blocks, priority...), which stays.
     */
    static Policy overlay(final Policy now, final Policy file)
    {
        final Policy.Builder policy = now.toBuilder().clearVersion().clearRollout().clearEffectiveFrom()
            .setSelector(file.getSelector()).setRate(file.getRate()).setBurst(file.getBurst()).setAlgorithm(file.getAlgorithm())
            .setCalendarWindow(file.getCalendarWindow()).setMode(file.getMode()).setOwner(file.getOwner()).setReason(file.getReason())
            .setUnlimited(file.getUnlimited()).clearReplaces().addAllReplaces(file.getReplacesList());
        if (file.getUnlimited())
        {
            // No limit of any kind: what was set for the limit it had goes with it.
            policy.clearMaxConcurrent().clearLeaseTtl().clearLimits().clearExcess().clearOveragePercent().clearMaxWait()
                .clearTokenLease().clearRegional().clearSplitAcrossShards().clearReserve().clearEmergency();
        }
        if (file.hasPeriod())
        {
            policy.setPeriod(file.getPeriod());
        }
        else
        {
            policy.clearPeriod();
        }
        return policy.build();
    }

    /** What an update changes ("rate 100 -> 50, mode ENFORCE -> SHADOW"), or empty when nothing does. */
    static String differences(final Policy now, final Policy imported)
    {
        final List<String> changed = new ArrayList<>();
        field(changed, "selector", Output.selector(now.getSelector()), Output.selector(imported.getSelector()));
        field(changed, "rate", Output.rate(now), Output.rate(imported));
        if (!now.getUnlimited() && !imported.getUnlimited())
        {
            field(changed, "burst", Output.burst(now), Output.burst(imported));
            field(changed, "algorithm", Output.named(now.getAlgorithm(), now.getAlgorithmValue(), "TOKEN_BUCKET"),
                Output.named(imported.getAlgorithm(), imported.getAlgorithmValue(), "TOKEN_BUCKET"));
        }
        field(changed, "replaces", replaces(now), replaces(imported));
        field(changed, "scope", Output.scope(now), Output.scope(imported));
        field(changed, "mode", mode(now), mode(imported));
        field(changed, "owner", now.getOwner(), imported.getOwner());
        if (now.hasRollout())
        {
            changed.add("ends the rollout in progress");
        }
        return String.join(", ", changed);
    }

    private static void field(final List<String> changed, final String name, final String before, final String after)
    {
        if (!Objects.equals(before, after))
        {
            changed.add(name + " " + before + " -> " + after);
        }
    }

    private static String replaces(final Policy policy)
    {
        return policy.getReplacesCount() == 0 ? "-" : String.join(",", policy.getReplacesList());
    }

    private static String mode(final Policy policy)
    {
        return policy.getMode() == Mode.SHADOW ? "SHADOW" : "ENFORCE";
    }
}
