package dev.limiter.cli.report;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Reads the nodes' admin APIs: who they are ({@code /status}), their bounded history
 * ({@code /v1/history}) and the snapshot sections of the report (hot keys, shadow comparison,
 * sampled rejections, appeals, SDK degraded windows). A section a node's build does not serve (404
 * "no such endpoint") is reported as such.
 */
final class NodeSources
{
    /** A node that answered: its id, region (or null), version and members, and its history's JSON. */
    record Node(HttpReader admin, String id, String region, String version, List<String> members, JsonObject history)
    {
    }

    private final List<Node> nodes = new ArrayList<>();
    private final List<String> missing = new ArrayList<>();

    private NodeSources()
    {
    }

    /**
     * Asks every address for its status and history after {@code sinceMillis}.
     *
     * @param skipUnreachable whether an address nobody answers at is left out (the default address list,
     *                        where the ports not in use are expected to be silent) rather than an error
     * @throws ReportException when an address required did not answer, refused the token, or none answered
     */
    static NodeSources read(final List<HttpReader> admins, final boolean skipUnreachable, final long sinceMillis)
        throws ReportException
    {
        final NodeSources sources = new NodeSources();
        final List<String> misses = new ArrayList<>();
        for (final HttpReader admin : admins)
        {
            final HttpReader.Answer status;
            try
            {
                status = admin.get("/status");
            }
            catch (final ReportException e)
            {
                if (!skipUnreachable)
                {
                    throw ReportException.failed("node " + e.getMessage() + ": a report without it would be missing " +
                        "its decisions (leave it out of --admin if it is gone)");
                }
                misses.add(e.getMessage());
                continue;
            }
            final JsonObject node = object(status, admin, "/status");
            final HttpReader.Answer history = admin.get("/v1/history?since=" + sinceMillis);
            if (history.status() == 401)
            {
                throw ReportException.failed(admin.base() + " refused the admin token (HTTP 401): pass the cluster's " +
                    "token with --token, LIMITER_ADMIN_TOKEN or data/admin-token");
            }
            final String id = string(node, "id", admin.base());
            final List<String> members = new ArrayList<>();
            if (node.has("members"))
            {
                node.getAsJsonArray("members").forEach(m -> members.add(string(m.getAsJsonObject(), "id", "?")));
            }
            final String region = node.has("region") ? string(node.getAsJsonObject("region"), "name", null) : null;
            if (HttpReader.unknownEndpoint(history))
            {
                sources.missing.add(id + " (" + admin.base() + ") keeps no history (an older build without " +
                    "GET /v1/history): its decisions are missing from the charts");
                sources.nodes.add(new Node(admin, id, region, string(node, "version", ""), members, null));
                continue;
            }
            sources.nodes.add(new Node(admin, id, region, string(node, "version", ""), members,
                object(history, admin, "/v1/history")));
        }
        if (sources.nodes.isEmpty())
        {
            throw ReportException.failed("no node answered: " + String.join("; ", misses) +
                ". Is the cluster running (./limiter cluster)? Otherwise point --admin at every node's admin address");
        }
        return sources;
    }

    List<Node> nodes()
    {
        return nodes;
    }

    /** The interval of the nodes' history points (the longest, when they differ), or {@code fallback}. */
    long intervalMillis(final long fallback)
    {
        long interval = 0;
        for (final Node node : nodes)
        {
            if (node.history() != null && node.history().has("intervalMs"))
            {
                interval = Math.max(interval, node.history().get("intervalMs").getAsLong());
            }
        }
        return interval > 0 ? interval : fallback;
    }

    /** The header's facts: cluster members, versions, and the members that gave no history. */
    void describe(final ReportData data)
    {
        final Set<String> members = new LinkedHashSet<>();
        final Set<String> versions = new LinkedHashSet<>();
        for (final Node node : nodes)
        {
            data.nodes.add(node.id() + (node.region() == null ? "" : " (" + node.region() + ")") + " at " +
                node.admin().base());
            members.addAll(node.members());
            versions.add(node.version().isEmpty() ? "unknown" : node.version());
        }
        data.cluster = String.join(", ", members);
        data.version = String.join(", ", versions);
        data.notes.addAll(missing);
        for (final String member : members)
        {
            if (nodes.stream().noneMatch(n -> n.id().equals(member)))
            {
                data.notes.add("member " + member + " was not asked (give its admin address in --admin): " +
                    "what it decided is missing");
            }
        }
    }

    /** Adds every node's history points to the report's series. */
    void addHistory(final ReportData data)
    {
        boolean anyRegion = false;
        for (final Node node : nodes)
        {
            if (node.history() == null)
            {
                continue;
            }
            anyRegion |= node.region() != null;
            for (final JsonElement element : node.history().getAsJsonArray("points"))
            {
                final JsonObject point = element.getAsJsonObject();
                final long at = point.get("atMillis").getAsLong();
                long allowed = 0;
                long denied = 0;
                for (final JsonElement p : point.getAsJsonArray("policies"))
                {
                    final JsonObject policy = p.getAsJsonObject();
                    final String id = policy.get("policy").getAsString();
                    for (int kind = 0; kind < ReportData.KINDS.length; kind++)
                    {
                        final JsonElement n = policy.get(ReportData.KINDS[kind]);
                        data.add(id, kind, at, n == null ? 0 : n.getAsLong());
                    }
                    allowed += policy.get("allowed").getAsLong();
                    denied += policy.get("denied").getAsLong();
                }
                if (node.region() != null)
                {
                    data.addRegion(node.region(), ReportData.ALLOWED, at, allowed);
                    data.addRegion(node.region(), ReportData.DENIED, at, denied);
                }
                data.p99(node.id(), at, point.get("latencyP99Micros").getAsLong());
                if (point.get("degraded").getAsBoolean())
                {
                    data.degraded(at);
                }
            }
        }
        if (!anyRegion)
        {
            data.regionNote = "no regions: the nodes were started without --region, so every decision is the one " +
                "region's (docs/regions.md)";
        }
    }

    /** Hot keys of every node (its busiest keys now, from a sample of its recent decisions). */
    void addHotKeys(final ReportData data) throws ReportException
    {
        for (final Node node : nodes)
        {
            final HttpReader.Answer answer = node.admin().get("/v1/hot-keys");
            if (!answer.ok())
            {
                data.notes.add(node.id() + " gave no hot keys (HTTP " + answer.status() + ")");
                continue;
            }
            final JsonObject report = object(answer, node.admin(), "/v1/hot-keys");
            for (final JsonElement shard : array(report, "shards"))
            {
                for (final JsonElement top : array(shard.getAsJsonObject(), "top"))
                {
                    final JsonObject key = top.getAsJsonObject();
                    final String scope = string(key, "scope", "TENANT");
                    data.hotKeys.add(new ReportData.HotKeyRow(node.id(),
                        "GLOBAL".equals(scope) ? "(global)" : string(key, "key", "-"), scope,
                        string(key, "policyId", ""), number(key, "share"), (long)number(key, "tokensPerSecond")));
                }
            }
        }
        data.hotKeys.sort((a, b) -> Double.compare(b.share(), a.share()));
        if (data.hotKeys.isEmpty())
        {
            data.hotKeysNote = "no hot keys: no node sampled a decision recently (hot keys are a view of the " +
                "last seconds, not of the whole window)";
        }
    }

    /** Every shadowed policy's comparison of predicted against enforced rejections, per tenant and route. */
    void addCompare(final ReportData data, final long sinceMillis) throws ReportException
    {
        final List<String> shadowed = data.policies().keySet().stream()
            .filter(p -> data.total(p, ReportData.SHADOW_WOULD_DENY) + data.total(p, ReportData.SHADOW_WOULD_ALLOW) > 0)
            .toList();
        if (shadowed.isEmpty())
        {
            data.compareNote = "no counts per tenant and route: they come from the shadow comparison, and no policy " +
                "ran a shadow version in this window";
            return;
        }
        final Map<List<String>, long[]> rows = new TreeMap<>((a, b) -> String.join("\0",
            a).compareTo(String.join("\0", b)));
        for (final Node node : nodes)
        {
            for (final String policy : shadowed)
            {
                final HttpReader.Answer answer = node.admin().getEither("/policies/" + encode(policy) +
                    "/compare?since=" + sinceMillis);
                if (HttpReader.unknownEndpoint(answer))
                {
                    data.compareNote = "no shadow comparison per tenant and route: " + node.id()
                        + "'s admin API has no " + "/v1/policies/{id}/compare (older build)";
                    return;
                }
                if (!answer.ok())
                {
                    continue; // no shadow version of it on this node any more
                }
                for (final JsonElement row : array(object(answer, node.admin(), "compare"), "rows"))
                {
                    final JsonObject r = row.getAsJsonObject();
                    final long[] sums = rows.computeIfAbsent(List.of(policy, string(r, "tenant", ""),
                        string(r, "route", "")), k -> new long[5]);
                    sums[0] += (long)number(r, "decisions");
                    sums[1] += (long)number(r, "enforcedRejections");
                    sums[2] += (long)number(r, "predictedRejections");
                    sums[3] += (long)number(r, "newlyRejected");
                    sums[4] += (long)number(r, "newlyFreed");
                }
            }
        }
        rows.forEach((k, s) -> data.compare.add(new ReportData.CompareRow(k.get(0), k.get(1), k.get(2), s[0], s[1],
            s[2], s[3], s[4])));
        if (data.compare.isEmpty())
        {
            data.compareNote = "the shadowed policies' comparisons hold no tenant or route yet";
        }
    }

    /** Every node's sampled rejected decisions in the window, counted per policy, tenant and route. */
    void addRejected(final ReportData data, final long sinceMillis) throws ReportException
    {
        final Map<List<String>, Long> counts = new TreeMap<>((a, b) -> String.join("\0",
            a).compareTo(String.join("\0", b)));
        for (final Node node : nodes)
        {
            final HttpReader.Answer answer = node.admin().getEither("/decisions/rejected?limit=1000");
            if (HttpReader.unknownEndpoint(answer))
            {
                data.rejectedNote = "no sampled rejections: " + node.id()
                    + "'s admin API has no /v1/decisions/rejected " + "(older build)";
                return;
            }
            if (!answer.ok())
            {
                data.notes.add(node.id() + " gave no sampled rejections (HTTP " + answer.status() + ")");
                continue;
            }
            for (final JsonElement element : array(object(answer, node.admin(), "rejected"), "decisions"))
            {
                final JsonObject decision = element.getAsJsonObject();
                if ((long)number(decision, "atMillis") >= sinceMillis)
                {
                    counts.merge(List.of(string(decision, "policy", ""), string(decision, "tenant", ""),
                        string(decision, "route", "")), 1L, Long::sum);
                }
            }
        }
        counts.forEach((k, n) -> data.rejected.add(new ReportData.RejectedRow(k.get(0), k.get(1), k.get(2), n)));
        data.rejected.sort((a, b) -> Long.compare(b.sampled(), a.sampled()));
        if (data.rejected.isEmpty())
        {
            data.rejectedNote = "no rejected decision was sampled in this window";
        }
    }

    /** The appeals of the window (replicated: the first node that answers has them all). */
    void addAppeals(final ReportData data, final long sinceMillis) throws ReportException
    {
        final Node node = nodes.get(0);
        final HttpReader.Answer answer = node.admin().getEither("/appeals?since=" + sinceMillis);
        if (HttpReader.unknownEndpoint(answer))
        {
            data.appealsNote = "no appeals: " + node.id() + "'s admin API has no /v1/appeals (older build)";
            if (data.falseRejectionsNote == null)
            {
                data.falseRejectionsNote = "false rejections are not counted by this build (no appeals): the figures " +
                    "below are not a measurement of none";
            }
            return;
        }
        if (!answer.ok())
        {
            data.appealsNote = "no appeals: " + node.id() + " answered HTTP " + answer.status();
            return;
        }
        for (final JsonElement element : array(object(answer, node.admin(), "appeals"), "appeals"))
        {
            final JsonObject a = element.getAsJsonObject();
            data.appeals.add(new ReportData.AppealRow((long)number(a, "atMillis"), string(a, "decisionId", ""),
                string(a, "policy", ""), (long)number(a, "version"), string(a, "tenant", ""), string(a, "route", ""),
                string(a, "owner", ""), string(a, "reason", "")));
        }
        if (data.appeals.isEmpty())
        {
            data.appealsNote = "no appeal was made in this window";
        }
    }

    /** The SDKs' reports of deciding on their own in the window (the replicated SDK trail). */
    void addDegradedReports(final ReportData data, final long sinceMillis) throws ReportException
    {
        final Node node = nodes.get(0);
        final HttpReader.Answer answer = node.admin().get("/v1/audit?limit=10000&since=" +
            encode(Instant.ofEpochMilli(sinceMillis).toString()));
        if (!answer.ok())
        {
            data.degradedNote = "no SDK reports: " + node.id() + " answered HTTP " + answer.status() + " to /v1/audit";
            return;
        }
        for (final JsonElement element : array(object(answer, node.admin(), "/v1/audit"), "records"))
        {
            final JsonObject record = element.getAsJsonObject();
            if ("SDK_DEGRADED_WINDOW".equals(string(record, "action", "")))
            {
                data.degradedReports.add(new ReportData.DegradedRow(string(record, "policyId", ""),
                    string(record, "detail", "")));
            }
        }
    }

    private static JsonObject object(final HttpReader.Answer answer, final HttpReader admin, final String what)
        throws ReportException
    {
        if (!answer.ok())
        {
            throw ReportException.failed(admin.base() + " answered HTTP " + answer.status() + " to " + what + ": " +
                oneLine(answer.body()));
        }
        try
        {
            return JsonParser.parseString(answer.body()).getAsJsonObject();
        }
        catch (final JsonParseException | IllegalStateException e)
        {
            throw ReportException.failed(admin.base() + " answered " + what + " with something not JSON (" +
                oneLine(answer.body()) + "): is that a limiter node's admin port?");
        }
    }

    private static String oneLine(final String body)
    {
        final String line = body == null ? "" : body.strip().replaceAll("\\s+", " ");
        return line.length() > 200 ? line.substring(0, 200) + "..." : line;
    }

    private static JsonArray array(final JsonObject object, final String name)
    {
        return object.has(name) && object.get(name).isJsonArray() ? object.getAsJsonArray(name) : new JsonArray();
    }

    private static String string(final JsonObject object, final String name, final String fallback)
    {
        final JsonElement value = object.get(name);
        return value == null || !value.isJsonPrimitive() ? fallback : value.getAsString();
    }

    /** A number, also one protobuf's JSON wrote as a string (64-bit integers); 0 when absent. */
    private static double number(final JsonObject object, final String name)
    {
        final JsonElement value = object.get(name);
        try
        {
            return value == null || !value.isJsonPrimitive() ? 0 : value.getAsDouble();
        }
        catch (final NumberFormatException e)
        {
            return 0;
        }
    }

    private static String encode(final String value)
    {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
    }
}
