package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.server.control.PolicyState;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One policy's shadow comparison on this node (GET /v1/policies/{id}/compare): the shards'
 * {@link ShadowCompareTable}s merged per tenant and route over the windows that overlap
 * {@code since}, for the shadow version in force only, sorted by impact (newly rejected plus newly
 * freed). A shard whose counts belong to an older version (it has not evaluated the new one yet)
 * adds nothing.
 */
public final class ShadowComparisons
{
    /** One tenant and route's counts, summed over shards and windows. */
    public record Row(String tenant, String route, long decisions, long enforcedRejections, long predictedRejections,
                      long newlyRejected, long newlyFreed)
    {
        long impact()
        {
            return newlyRejected + newlyFreed;
        }
    }

    /**
     * The comparison: versions, what it covers from ({@code sinceMillis}: the start of the oldest window
     * included, never before the versions were first counted), its rows and what did not fit.
     */
    public record Comparison(String policy, long enforcedVersion, long shadowVersion, long sinceMillis, List<Row> rows,
                             long untracked)
    {
        /** The contract's JSON: numbers as numbers, strings escaped. */
        public String toJson()
        {
            final StringBuilder json = new StringBuilder(256 + rows.size() * 160);
            json.append("{\"policy\":").append(quoted(policy)).append(",\"enforcedVersion\":").append(enforcedVersion)
                .append(",\"shadowVersion\":").append(shadowVersion).append(",\"sinceMillis\":").append(sinceMillis)
                .append(",\"windowMillis\":").append(ShadowCompareTable.WINDOW_MILLIS).append(",\"rows\":[");
            for (int i = 0; i < rows.size(); i++)
            {
                final Row row = rows.get(i);
                json.append(i == 0 ? "{" : ",{").append("\"tenant\":").append(quoted(row.tenant()))
                    .append(",\"route\":").append(quoted(row.route()))
                    .append(",\"decisions\":").append(row.decisions())
                    .append(",\"enforcedRejections\":").append(row.enforcedRejections())
                    .append(",\"predictedRejections\":").append(row.predictedRejections())
                    .append(",\"newlyRejected\":").append(row.newlyRejected())
                    .append(",\"newlyFreed\":").append(row.newlyFreed()).append('}');
            }
            return json.append("],\"tracked\":").append(rows.size()).append(",\"untracked\":").append(untracked)
                .append("}\n").toString();
        }
    }

    /** Why there is nothing to compare: the id was never created, or it has no shadow version in force. */
    public static final class NothingToCompare extends Exception
    {
        private static final long serialVersionUID = 1L;

        NothingToCompare(final String message)
        {
            super(message, null, false, false);
        }
    }

    private ShadowComparisons()
    {
    }

    /**
     * Policy {@code id}'s comparison from {@code sinceMillis} (0: as far back as the tables keep).
     *
     * @throws NothingToCompare when the policy is unknown or has no shadow version in force
     */
    public static CompletableFuture<Comparison> of(final List<Shard> shards, final PolicyState policies,
        final String id, final long sinceMillis) throws NothingToCompare
    {
        if (policies.history(id) == null)
        {
            throw new NothingToCompare("no policy " + id + " was ever created (see GET /v1/policies)");
        }
        final CompiledPolicy shadow = shadowOf(policies, id);
        if (shadow == null)
        {
            throw new NothingToCompare("policy " + id
                + " has no shadow version in force: put a version with mode SHADOW, "
                + "or a rollout with othersInShadow, and compare once traffic has been evaluated");
        }
        final Policy enforced = policies.current(id);
        final long enforcedNow = enforced == null || shadow.rolloutShadowsOthers() && !shadow.shadow() ? 0 :
            enforced.getVersion();
        final List<CompletableFuture<ShadowCompareTable.Snapshot>> reads = new ArrayList<>(shards.size());
        for (final Shard shard : shards)
        {
            reads.add(shard.shadowComparisons());
        }
        return CompletableFuture.allOf(reads.toArray(new CompletableFuture<?>[0])).thenApply(done ->
        {
            final List<ShadowCompareTable.Snapshot> snapshots = new ArrayList<>(reads.size());
            reads.forEach(read -> snapshots.add(read.join()));
            return merge(snapshots, id, shadow.ordinal(), shadow.version(), enforcedNow, sinceMillis);
        });
    }

    /**
     * The shadow version of {@code id} in force: a SHADOW version, else a rollout's version that shadows
     * the tenants it leaves out; null when neither.
     */
    private static CompiledPolicy shadowOf(final PolicyState policies, final String id)
    {
        CompiledPolicy rollout = null;
        for (final CompiledPolicy policy : policies.index().policies())
        {
            if (policy.id().equals(id) && policy.shadow())
            {
                return policy;
            }
            if (policy.id().equals(id) && policy.rolloutShadowsOthers())
            {
                rollout = policy;
            }
        }
        return rollout;
    }

    /**
     * Merges the shards' counts of {@code ordinal} under {@code shadowVersion} (and the newest enforced
     * version counted with it) in the windows that end after {@code sinceMillis}.
     */
    static Comparison merge(final List<ShadowCompareTable.Snapshot> snapshots, final String id, final int ordinal,
        final long shadowVersion, final long enforcedNow, final long sinceMillis)
    {
        long enforcedVersion = -1;
        long countedSince = Long.MAX_VALUE;
        for (final ShadowCompareTable.Snapshot snapshot : snapshots)
        {
            final ShadowCompareTable.Versions versions = snapshot.versions(ordinal);
            if (versions != null && versions.shadowVersion() == shadowVersion
                && versions.enforcedVersion() >= enforcedVersion)
            {
                countedSince = versions.enforcedVersion() > enforcedVersion ? versions.sinceMillis() :
                    Math.min(countedSince, versions.sinceMillis());
                enforcedVersion = versions.enforcedVersion();
            }
        }
        final Map<String, long[]> merged = new LinkedHashMap<>();
        final Map<String, String[]> names = new LinkedHashMap<>();
        long untracked = 0;
        long from = Long.MAX_VALUE;
        for (final ShadowCompareTable.Snapshot snapshot : snapshots)
        {
            final ShadowCompareTable.Versions versions = snapshot.versions(ordinal);
            if (versions == null || versions.shadowVersion() != shadowVersion
                || versions.enforcedVersion() != enforcedVersion)
            {
                continue; // nothing of this version counted on that shard (yet)
            }
            for (final ShadowCompareTable.Window window : snapshot.windows())
            {
                if (window.startMillis() + ShadowCompareTable.WINDOW_MILLIS <= sinceMillis)
                {
                    continue;
                }
                from = Math.min(from, window.startMillis());
                untracked += window.untracked(ordinal);
                for (final ShadowCompareTable.Row row : window.rows())
                {
                    if (row.ordinal() != ordinal)
                    {
                        continue;
                    }
                    final String tenant = row.tenant();
                    final String route = row.route();
                    final String key = tenant + '\u0000' + route;
                    names.putIfAbsent(key, new String[] {tenant, route});
                    final long[] counts = merged.computeIfAbsent(key, k -> new long[5]);
                    counts[0] += row.decisions();
                    counts[1] += row.enforcedRejections();
                    counts[2] += row.predictedRejections();
                    counts[3] += row.newlyRejected();
                    counts[4] += row.newlyFreed();
                }
            }
        }
        final List<Row> rows = new ArrayList<>(merged.size());
        merged.forEach((key, c) ->
            rows.add(new Row(names.get(key)[0], names.get(key)[1], c[0], c[1], c[2], c[3], c[4])));
        rows.sort(Comparator.comparingLong(Row::impact).reversed()
            .thenComparing(Comparator.comparingLong(Row::decisions).reversed())
            .thenComparing(Row::tenant).thenComparing(Row::route));
        final long covered = from == Long.MAX_VALUE ? Math.max(sinceMillis, countedSince == Long.MAX_VALUE ? 0
            : countedSince) : Math.max(from, countedSince);
        return new Comparison(id, enforcedVersion < 0 ? enforcedNow : enforcedVersion, shadowVersion, covered,
            List.copyOf(rows), untracked);
    }

    private static String quoted(final String text)
    {
        final StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            switch (c)
            {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                default ->
                {
                    if (c < 0x20 || c == 0x2028 || c == 0x2029)
                    {
                        out.append(String.format("\\u%04x", (int)c));
                    }
                    else
                    {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
