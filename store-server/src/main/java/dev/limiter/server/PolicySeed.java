package dev.limiter.server;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Objects;

/**
 * The policy file a node starts from ({@code --policies}; none: the default baseline alone), read and
 * checked at construction, and the bootstrap command that makes it the first version of every policy:
 * applied at once on a single node, the first entry of the control log in a cluster.
 */
final class PolicySeed
{
    private final PolicySetIndex index;

    private PolicySeed(final PolicySetIndex index)
    {
        this.index = index;
    }

    /**
     * Reads and checks the policy file for a node of {@code shards} shards.
     *
     * @throws PolicyValidationException when the file is unreadable or invalid, naming each problem
     */
    static PolicySeed read(final StorageConfig storage, final int shards)
    {
        final PolicySetIndex index = load(storage);
        final List<String> stackedProblems = index.policies().stream()
            .map(p -> PolicyControl.stackedProblem(p.source(), shards))
            .filter(Objects::nonNull).toList();
        if (!stackedProblems.isEmpty())
        {
            throw new PolicyValidationException(stackedProblems);
        }
        return new PolicySeed(index);
    }

    private static PolicySetIndex load(final StorageConfig config)
    {
        if (config.policiesFile() == null)
        {
            return PolicySetIndex.compile(PolicySet.getDefaultInstance());
        }
        final String json;
        try
        {
            json = Files.readString(config.policiesFile(), StandardCharsets.UTF_8);
        }
        catch (final IOException e)
        {
            throw new PolicyValidationException(List.of("cannot read policy file " + config.policiesFile() + ": " + e));
        }
        return PolicySetIndex.fromJson(json);
    }

    /** The bootstrap command of the file's policies, by {@code actor} (the node), now. */
    PolicyCommand command(final String actor)
    {
        final PolicySet.Builder set = PolicySet.newBuilder().setVersion(index.version());
        for (final CompiledPolicy policy : index.policies())
        {
            if (policy != index.defaultPolicy())
            {
                set.addPolicies(policy.source());
            }
        }
        set.setDefaultPolicy(index.defaultPolicy().source());
        return PolicyState.command(actor, System.currentTimeMillis()).setBootstrap(set).build();
    }
}
