package dev.limiter.cli;

import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The names a rate_limit's {@code replaces} lists, as the policy ids a {@code replaces} holds.
 * envoyproxy/ratelimit matches them by name among the limits of a request's domain; here a
 * name becomes the ids of every limit of that name in the files of one import (of the same
 * domain), else the cluster's envoy policy of that domain whose id the name makes. A name that is
 * neither replaces nothing: it is left out, with a note.
 */
final class EnvoyReplaces
{
    private EnvoyReplaces()
    {
    }

    /**
     * Every file's policies, in order, with {@code replaces} as the ids they are stored under.
     *
     * @param results    each file's conversion (without errors)
     * @param cluster    the cluster's policies, or null when no node is asked ({@code --print})
     * @param storedIds  a file policy's id -> the id it is stored under, where they differ (an update keeps
     *                   the id of the cluster's policy it updates)
     * @param notes      receives, per file, each name that replaces nothing
     */
    static List<Policy> resolve(final List<EnvoyConfigImport.Result> results, final PolicySet cluster,
        final Map<String, String> storedIds, final List<String> notes)
    {
        final List<Policy> resolved = new ArrayList<>();
        for (final EnvoyConfigImport.Result result : results)
        {
            for (final Policy policy : result.policies())
            {
                final Set<String> ids = new LinkedHashSet<>(policy.getReplacesList());
                for (final EnvoyConfigImport.Replacing entry : result.replacing())
                {
                    if (entry.policyId().equals(policy.getId()))
                    {
                        ids.addAll(idsOf(entry, result, results, cluster, notes));
                    }
                }
                final String self = storedIds.getOrDefault(policy.getId(), policy.getId());
                final Set<String> stored = new LinkedHashSet<>();
                ids.forEach(id -> stored.add(storedIds.getOrDefault(id, id)));
                stored.remove(self);
                resolved.add(stored.equals(new LinkedHashSet<>(policy.getReplacesList())) ? policy :
                    policy.toBuilder().clearReplaces().addAllReplaces(stored).build());
            }
        }
        return resolved;
    }

    private static List<String> idsOf(final EnvoyConfigImport.Replacing entry, final EnvoyConfigImport.Result file,
        final List<EnvoyConfigImport.Result> results, final PolicySet cluster, final List<String> notes)
    {
        final List<String> ids = new ArrayList<>();
        for (final EnvoyConfigImport.Result other : results)
        {
            if (other.domain().equals(file.domain()))
            {
                ids.addAll(other.names().getOrDefault(entry.name(), List.of()));
            }
        }
        if (!ids.isEmpty())
        {
            return ids;
        }
        final String id = EnvoyConfigImport.idOf(entry.name());
        if (cluster != null && cluster.getPoliciesList().stream().anyMatch(p -> p.getId().equals(id) &&
            p.getSelector().hasEnvoy() && p.getSelector().getEnvoy().getDomain().equals(file.domain())))
        {
            return List.of(id);
        }
        notes.add(file.source() + ": " + entry.where() + ": '" + entry.name() + "' replaces nothing: no rate_limit of domain '" +
            file.domain() + "' in the files is named so, and " + (cluster == null ?
                "--print asks no node for a policy '" + id + "' (import without --print to keep a replaces of the cluster's policy)" :
                "the cluster has no envoy policy '" + id + "' of that domain") + "; left out (envoyproxy/ratelimit too replaces nothing then)");
        return List.of();
    }
}
