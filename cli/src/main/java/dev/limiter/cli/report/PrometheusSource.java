package dev.limiter.cli.report;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;

/**
 * The report's series from Prometheus' HTTP API ({@code /api/v1/query_range}) instead of the nodes'
 * history: the same counters as the nodes export them ({@code limiter_decisions_total},
 * {@code limiter_shadow_decisions_total}, {@code limiter_false_rejections_total} (the same on every
 * member: its maximum), the decision latency's p99 (from its histogram buckets), the SDKs'
 * {@code limiter_sdk_local_decisions_total}), as increases per step.
 */
final class PrometheusSource
{
    private final HttpReader prometheus;

    PrometheusSource(final HttpReader prometheus)
    {
        this.prometheus = prometheus;
    }

    /** Fills {@code data}'s series and header from Prometheus. */
    void read(final ReportData data) throws ReportException
    {
        final long step = data.stepMillis() / 1000;
        final String range = "[" + step + "s]";
        final JsonArray decisions = counters(data, "limiter_decisions_total", "policy, outcome");
        for (final JsonElement series : decisions)
        {
            final JsonObject metric = series.getAsJsonObject().getAsJsonObject("metric");
            final String outcome = label(metric, "outcome");
            final int kind = "allowed".equals(outcome) ? ReportData.ALLOWED : "denied".equals(outcome)
                ? ReportData.DENIED : -1;
            if (kind >= 0)
            {
                forEachDelta(data, series, (at, n) -> data.add(label(metric, "policy"), kind, at, n));
            }
        }
        for (final JsonElement series : counters(data, "limiter_shadow_decisions_total", "policy, outcome"))
        {
            final JsonObject metric = series.getAsJsonObject().getAsJsonObject("metric");
            final int kind = "would_deny".equals(label(metric, "outcome")) ? ReportData.SHADOW_WOULD_DENY :
                ReportData.SHADOW_WOULD_ALLOW;
            forEachDelta(data, series, (at, n) -> data.add(label(metric, "policy"), kind, at, n));
        }
        // Every member exports the same count (it is read from the replicated appeals): one series per policy.
        final JsonArray falseRejections = range(data, data.fromMillis(),
            "max by (policy) (limiter_false_rejections_total)");
        if (falseRejections.isEmpty())
        {
            data.falseRejectionsNote = "Prometheus holds no limiter_false_rejections_total: the nodes' build counts " +
                "no appeals, so the figures below are not a measurement of none";
        }
        for (final JsonElement series : falseRejections)
        {
            final String policy = label(series.getAsJsonObject().getAsJsonObject("metric"), "policy");
            forEachDelta(data, series, (at, n) -> data.add(policy, ReportData.FALSE_REJECTIONS, at, n));
        }
        boolean anyRegion = false;
        for (final JsonElement series : decisions)
        {
            final JsonObject metric = series.getAsJsonObject().getAsJsonObject("metric");
            final String region = label(metric, "region");
            if (region.isEmpty())
            {
                continue;
            }
            anyRegion = true;
            final int kind = "allowed".equals(label(metric, "outcome")) ? ReportData.ALLOWED : ReportData.DENIED;
            forEachDelta(data, series, (at, n) -> data.addRegion(region, kind, at, n));
        }
        if (!anyRegion)
        {
            data.regionNote = "no regions: the series in Prometheus carry no region label (add one per region to the " +
                "scrape configuration, or report from the nodes' history)";
        }
        for (final JsonElement series : range(data, data.fromMillis() + data.stepMillis(),
            "histogram_quantile(0.99, sum by (instance, le) (rate(limiter_decision_latency_seconds_bucket" + range
                + ")))"))
        {
            final String instance = label(series.getAsJsonObject().getAsJsonObject("metric"), "instance");
            forEachValue(series, (at, v) -> data.p99(instance, at, Math.round(v * 1e6)));
        }
        final JsonArray local = range(data, data.fromMillis() + data.stepMillis(),
            "sum(increase(limiter_sdk_local_decisions_total" + range + "))");
        if (local.isEmpty())
        {
            data.degradedNote = "Prometheus holds no limiter_sdk_local_decisions_total (no SDK is scraped): SDKs' " +
                "degraded windows are read from the nodes only";
        }
        for (final JsonElement series : local)
        {
            forEachValue(series, (at, v) ->
            {
                if (v > 0)
                {
                    data.degraded(at);
                }
            });
        }
        describe(data);
    }

    /** The header: the instances Prometheus scrapes and their builds' versions. */
    private void describe(final ReportData data) throws ReportException
    {
        final Set<String> instances = new LinkedHashSet<>();
        final Set<String> versions = new LinkedHashSet<>();
        for (final JsonElement series : query("/api/v1/query?query=" + encode("limiter_build_info")))
        {
            final JsonObject metric = series.getAsJsonObject().getAsJsonObject("metric");
            instances.add(label(metric, "instance"));
            versions.add(label(metric, "version"));
        }
        if (instances.isEmpty())
        {
            data.notes.add("Prometheus at " + prometheus.base()
                + " scrapes no limiter node now (no limiter_build_info)");
        }
        if (data.cluster.isEmpty())
        {
            data.cluster = String.join(", ", instances);
        }
        if (data.version.isEmpty())
        {
            data.version = String.join(", ", versions);
        }
    }

    /**
     * A counter's values at every step's end, per instance and {@code by}, from the window's start (a
     * baseline): the differences of consecutive values are exact counts, where increase() would extrapolate.
     */
    private JsonArray counters(final ReportData data, final String metric, final String by) throws ReportException
    {
        return range(data, data.fromMillis(), "sum by (instance, " + by + ", region) (" + metric + ")");
    }

    private JsonArray range(final ReportData data, final long startMillis, final String promql) throws ReportException
    {
        return query("/api/v1/query_range?query=" + encode(promql) + "&start=" + seconds(startMillis) +
            "&end=" + seconds(data.toMillis()) + "&step=" + data.stepMillis() / 1000 + "s");
    }

    private static String seconds(final long millis)
    {
        return String.format(Locale.ROOT, "%d.%03d", millis / 1000, millis % 1000);
    }

    private JsonArray query(final String pathAndQuery) throws ReportException
    {
        final HttpReader.Answer answer;
        try
        {
            answer = prometheus.get(pathAndQuery);
        }
        catch (final ReportException e)
        {
            throw ReportException.failed("Prometheus: " + e.getMessage());
        }
        final JsonObject body;
        try
        {
            body = JsonParser.parseString(answer.body()).getAsJsonObject();
        }
        catch (final JsonParseException | IllegalStateException e)
        {
            throw ReportException.failed("Prometheus at " + prometheus.base() + " answered HTTP " + answer.status() +
                " with something not JSON: is --prometheus the address of Prometheus' HTTP API " +
                "(e.g. http://127.0.0.1:9090)?");
        }
        if (!answer.ok() || !"success".equals(body.has("status") ? body.get("status").getAsString() : ""))
        {
            throw ReportException.failed("Prometheus at " + prometheus.base() + " answered HTTP "
                + answer.status() + ": " + (body.has("errorType") ? body.get("errorType").getAsString() + ": "
                : "") + (body.has("error") ? body.get("error").getAsString() : answer.body().strip()));
        }
        final JsonObject result = body.getAsJsonObject("data");
        return result == null || !result.has("result") ? new JsonArray() : result.getAsJsonArray("result");
    }

    @FunctionalInterface
    private interface Value
    {
        void at(long atMillis, double value);
    }

    /**
     * The count of each step of a counter series: its value minus the previous step's (the value itself
     * after a reset, and for a series that first appears after the window's start: the node started, or Prometheus
     * began to scrape it).
     */
    private static void forEachDelta(final ReportData data, final JsonElement series, final Count count)
    {
        final long[] previous = {Long.MIN_VALUE};
        final boolean[] first = {true};
        forEachValue(series, (at, v) ->
        {
            final long value = Math.round(v);
            if (first[0])
            {
                first[0] = false;
                previous[0] = value;
                if (at > data.fromMillis())
                {
                    count.at(at, value);
                }
                return;
            }
            count.at(at, value >= previous[0] ? value - previous[0] : value);
            previous[0] = value;
        });
    }

    @FunctionalInterface
    private interface Count
    {
        void at(long atMillis, long n);
    }

    private static void forEachValue(final JsonElement series, final Value value)
    {
        final JsonObject object = series.getAsJsonObject();
        if (!object.has("values"))
        {
            return;
        }
        for (final JsonElement pair : object.getAsJsonArray("values"))
        {
            final JsonArray sample = pair.getAsJsonArray();
            final double v;
            try
            {
                v = Double.parseDouble(sample.get(1).getAsString());
            }
            catch (final NumberFormatException e)
            {
                continue;
            }
            if (!Double.isNaN(v) && !Double.isInfinite(v))
            {
                value.at(Math.round(sample.get(0).getAsDouble() * 1000), v);
            }
        }
    }

    private static String label(final JsonObject metric, final String name)
    {
        return metric != null && metric.has(name) ? metric.get(name).getAsString() : "";
    }

    private static String encode(final String value)
    {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
    }
}
