package dev.limiter.cli.report;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Renders a {@link ReportData} as one self-contained HTML page: inline CSS, inline SVG charts
 * ({@link SvgChart}) and one inline script that checks every chart drew at least one visible mark and
 * says so on the root element ({@code data-charts-ok="true"|"false"}, {@code data-charts=N}) and in the
 * title, logging a console error for an empty one. Its Content-Security-Policy forbids loading anything.
 */
final class HtmlReport
{
    /** The most policies drawn one chart each; the table lists them all. */
    private static final int MAX_POLICY_CHARTS = 12;
    private static final int MAX_ROWS = 25;

    private static final String STYLE = """
        body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;
        max-width:940px;color:#222;padding:0 12px}
        h1{font-size:24px;margin:0 0 8px}
        h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
        dl.header{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}dl.header dt{color:#666}
        dl.header dd{margin:0}
        table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{padding:3px 10px;border-bottom:1px solid #eee;
        text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f5f5f5}
        figure.chart{margin:12px 0}figcaption{font-weight:600;margin-bottom:2px}
        svg{width:100%;height:auto;font-size:11px;fill:#444}svg text.unit{fill:#888}
        .legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;width:14px;height:4px;
        margin-right:4px;vertical-align:middle}.legend i.dashed{height:2px;border-top:2px dashed #fff}
        p.note{color:#555;background:#f7f7f2;border-left:3px solid #c9b458;padding:6px 10px}
        p.empty-window{font-size:16px;font-weight:600;background:#f2f7fb;border-left:3px solid #1565c0;padding:8px 12px}
        ul.notes li{color:#8a4b00}
        """;

    private static final String CHECK = """
        (function () {
          var charts = document.querySelectorAll('figure.chart');
          var empty = [];
          charts.forEach(function (chart) {
            var drawn = Array.prototype.some.call(chart.querySelectorAll('svg .mark'), function (mark) {
              var box = mark.getBBox();
              return box.width > 0 || box.height > 0;
            });
            if (!drawn) { empty.push(chart.id); }
          });
          var ok = empty.length === 0;
          document.documentElement.setAttribute('data-charts', String(charts.length));
          document.documentElement.setAttribute('data-charts-ok', ok ? 'true' : 'false');
          document.title += ok ? ' [charts ok]' : ' [EMPTY CHARTS]';
          if (!ok) { console.error('report: charts without marks: ' + empty.join(', ')); }
        })();
        """;

    private final ReportData data;
    private final StringBuilder html = new StringBuilder(64 * 1024);
    private int charts;

    private HtmlReport(final ReportData data)
    {
        this.data = data;
    }

    /** The page for {@code data}, generated at {@code generatedMillis}. */
    static String render(final ReportData data, final long generatedMillis)
    {
        return new HtmlReport(data).page(generatedMillis);
    }

    private String page(final long generatedMillis)
    {
        html.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
            .append("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ")
            .append("style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">")
            .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
            .append("<title>").append(Html.escape("limiter report " + time(data.fromMillis()) + " to " +
                time(data.toMillis()))).append("</title><style>").append(STYLE).append("</style></head><body>\n");
        header(generatedMillis);
        final boolean decided = data.decisions() > 0;
        if (!decided)
        {
            html.append("<p class=\"empty-window\">no decisions in this window: no node allowed or denied a request " +
                "between ").append(Html.escape(time(data.fromMillis()))).append(" and ")
                .append(Html.escape(time(data.toMillis()))).append(" UTC</p>\n");
        }
        byPolicy(decided);
        byRegion(decided);
        byTenantAndRoute();
        shadow();
        degraded();
        hotKeys();
        falseRejections();
        latency();
        html.append("<script>").append(CHECK).append("</script>\n</body></html>\n");
        return html.toString();
    }

    private void header(final long generatedMillis)
    {
        html.append("<h1>Rate limiter report</h1>\n<dl class=\"header\">");
        item("Cluster", data.cluster.isEmpty() ? "unknown" : data.cluster);
        item("Version", data.version.isEmpty() ? "unknown" : data.version);
        item("Window", time(data.fromMillis()) + " to " + time(data.toMillis()) + " UTC (" +
            duration(data.toMillis() - data.fromMillis()) + ", one step every " + duration(data.stepMillis()) + ")");
        item("Generated", time(generatedMillis) + " UTC");
        item("Source", data.source());
        if (!data.nodes.isEmpty())
        {
            item("Nodes asked", String.join("; ", data.nodes));
        }
        html.append("</dl>\n");
        if (!data.notes.isEmpty())
        {
            html.append("<ul class=\"notes\">");
            data.notes.forEach(n -> html.append("<li>").append(Html.escape(n)).append("</li>"));
            html.append("</ul>\n");
        }
    }

    private void item(final String name, final String value)
    {
        html.append("<dt>").append(Html.escape(name)).append("</dt><dd>").append(Html.escape(value)).append("</dd>");
    }

    private void byPolicy(final boolean decided)
    {
        html.append("<h2 id=\"policies\">Allowed and denied by policy</h2>\n");
        if (!decided)
        {
            html.append(Html.note("nothing to chart: no decisions in this window"));
            return;
        }
        final List<List<String>> rows = new ArrayList<>();
        for (final String policy : policiesByVolume())
        {
            final long allowed = data.total(policy, ReportData.ALLOWED);
            final long denied = data.total(policy, ReportData.DENIED);
            rows.add(List.of(policy, Html.number(allowed), Html.number(denied), Html.percent(denied, allowed + denied),
                Html.number(data.total(policy, ReportData.SHADOW_WOULD_DENY))));
        }
        html.append(Html.table(List.of("policy", "allowed", "denied", "denied share", "shadow would deny"), rows));
        int drawn = 0;
        for (final String policy : policiesByVolume())
        {
            if (data.total(policy, ReportData.ALLOWED) + data.total(policy, ReportData.DENIED) == 0)
            {
                continue;
            }
            if (drawn++ == MAX_POLICY_CHARTS)
            {
                html.append(Html.note("the other policies are in the table only"));
                break;
            }
            final long[][] counts = data.policies().get(policy);
            chart(SvgChart.lines("policy-" + (charts + 1), policy + ": decisions per step", "decisions", data, List.of(
                new SvgChart.Series("allowed", doubles(counts[ReportData.ALLOWED]), SvgChart.GREEN, false),
                new SvgChart.Series("denied", doubles(counts[ReportData.DENIED]), SvgChart.RED, false))));
        }
    }

    private void byRegion(final boolean decided)
    {
        html.append("<h2 id=\"regions\">By region</h2>\n");
        if (data.regionNote != null)
        {
            html.append(Html.note(data.regionNote));
        }
        if (data.regions().isEmpty() || !decided)
        {
            return;
        }
        final List<SvgChart.Series> series = new ArrayList<>();
        final List<List<String>> rows = new ArrayList<>();
        int c = 0;
        for (final Map.Entry<String, long[][]> region : data.regions().entrySet())
        {
            final String color = SvgChart.PALETTE[c++ % SvgChart.PALETTE.length];
            series.add(new SvgChart.Series(region.getKey() + " allowed", doubles(region.getValue()[0]), color, false));
            series.add(new SvgChart.Series(region.getKey() + " denied", doubles(region.getValue()[1]), color, true));
            final long allowed = sum(region.getValue()[0]);
            final long denied = sum(region.getValue()[1]);
            rows.add(List.of(region.getKey(), Html.number(allowed), Html.number(denied), Html.percent(denied,
                allowed + denied)));
        }
        html.append(Html.table(List.of("region", "allowed", "denied", "denied share"), rows));
        chart(SvgChart.lines("regions", "Decisions per step by region (dashed: denied)", "decisions", data, series));
    }

    private void byTenantAndRoute()
    {
        html.append("<h2 id=\"tenants\">By tenant and route</h2>\n");
        if (data.compare.isEmpty())
        {
            html.append(Html.note(data.compareNote == null ? "no per tenant and route counts" : data.compareNote));
        }
        else
        {
            final Map<String, long[]> byKey = new TreeMap<>();
            for (final ReportData.CompareRow row : data.compare)
            {
                final long[] sums = byKey.computeIfAbsent(row.tenant() + " " + row.route(), k -> new long[2]);
                sums[0] += row.decisions() - row.enforcedRejections();
                sums[1] += row.enforcedRejections();
            }
            final List<Map.Entry<String, long[]>> top = byKey.entrySet().stream()
                .sorted(Comparator.comparingLong((Map.Entry<String, long[]> e) -> -(e.getValue()[0] + e.getValue()[1])))
                .limit(MAX_ROWS).toList();
            chart(SvgChart.bars("tenants", "Decisions by tenant and route (policies with a shadow version)",
                top.stream().map(Map.Entry::getKey).toList(),
                top.stream().map(e -> new double[] {e.getValue()[0], e.getValue()[1]}).toList(),
                List.of("allowed", "denied"), new String[] {SvgChart.GREEN, SvgChart.RED}));
        }
        html.append("<h3>Sampled rejected decisions</h3>\n");
        if (data.rejected.isEmpty())
        {
            html.append(Html.note(data.rejectedNote == null ? "no rejected decision was sampled" : data.rejectedNote));
            return;
        }
        final List<List<String>> rows = new ArrayList<>();
        data.rejected.stream().limit(MAX_ROWS).forEach(r -> rows.add(List.of(r.policy(), r.tenant(), r.route(),
            Html.number(r.sampled()))));
        html.append(Html.table(List.of("policy", "tenant", "route", "sampled rejections"), rows));
    }

    private void shadow()
    {
        html.append("<h2 id=\"shadow\">Shadow: predicted against enforced</h2>\n");
        final List<String> shadowed = data.policies().keySet().stream().filter(p ->
            data.total(p, ReportData.SHADOW_WOULD_DENY) + data.total(p, ReportData.SHADOW_WOULD_ALLOW) > 0).toList();
        if (shadowed.isEmpty())
        {
            html.append(Html.note("no shadow evaluations in this window: no policy ran a shadow version"));
            return;
        }
        final List<List<String>> rows = new ArrayList<>();
        for (final String policy : shadowed)
        {
            final long wouldDeny = data.total(policy, ReportData.SHADOW_WOULD_DENY);
            final long evaluated = wouldDeny + data.total(policy, ReportData.SHADOW_WOULD_ALLOW);
            final long denied = data.total(policy, ReportData.DENIED);
            final long decided = denied + data.total(policy, ReportData.ALLOWED);
            rows.add(List.of(policy, Html.number(denied), Html.percent(denied, decided), Html.number(wouldDeny),
                Html.percent(wouldDeny, evaluated)));
        }
        html.append(Html.table(List.of("policy", "enforced denials", "enforced denied share", "shadow would deny",
            "shadow would-deny share"), rows));
        for (final String policy : shadowed)
        {
            final long[][] counts = data.policies().get(policy);
            chart(SvgChart.lines("shadow-" + (charts + 1), policy
                + ": enforced denials against the shadow's prediction", "decisions", data, List.of(
                    new SvgChart.Series("enforced denials", doubles(counts[ReportData.DENIED]), SvgChart.RED, false),
                    new SvgChart.Series("shadow would deny", doubles(counts[ReportData.SHADOW_WOULD_DENY]),
                        SvgChart.ORANGE, true))));
        }
        if (data.compare.isEmpty())
        {
            html.append(Html.note(data.compareNote == null ? "no comparison per tenant and route" : data.compareNote));
            return;
        }
        final List<List<String>> compared = new ArrayList<>();
        data.compare.stream().sorted(Comparator.comparingLong(r -> -(r.newlyRejected() + r.newlyFreed())))
            .limit(MAX_ROWS)
            .forEach(r -> compared.add(List.of(r.policy(), r.tenant(), r.route(), Html.number(r.decisions()),
                Html.number(r.enforcedRejections()), Html.number(r.predictedRejections()),
                Html.number(r.newlyRejected()), Html.number(r.newlyFreed()))));
        html.append(Html.table(List.of("policy", "tenant", "route", "decisions", "enforced rejections",
            "predicted rejections", "newly rejected", "newly freed"), compared));
    }

    private void degraded()
    {
        html.append("<h2 id=\"degraded\">Degraded windows</h2>\n");
        if (data.degradedNote != null)
        {
            html.append(Html.note(data.degradedNote));
        }
        boolean any = false;
        for (final boolean d : data.degraded())
        {
            any |= d;
        }
        if (!any && data.degradedReports.isEmpty())
        {
            html.append(Html.note("no SDK reported deciding on its own in this window"));
            return;
        }
        if (any)
        {
            chart(SvgChart.band("degraded", "Steps in which an SDK decided on its own (no node answered it in time)",
                data, data.degraded(), SvgChart.ORANGE));
        }
        final List<List<String>> rows = new ArrayList<>();
        data.degradedReports.stream().limit(MAX_ROWS).forEach(r -> rows.add(List.of(r.client(), r.detail())));
        if (!rows.isEmpty())
        {
            html.append(Html.table(List.of("SDK", "window and its decisions"), rows));
        }
    }

    private void hotKeys()
    {
        html.append("<h2 id=\"hot-keys\">Hot keys</h2>\n");
        if (data.hotKeys.isEmpty())
        {
            html.append(Html.note(data.hotKeysNote == null ? "no hot keys" : data.hotKeysNote));
            return;
        }
        html.append(Html.note("each node's busiest keys now, from a sample of its most recent decisions " +
            "(a view of the last seconds, not of the whole window)"));
        final List<ReportData.HotKeyRow> top = data.hotKeys.stream().limit(MAX_ROWS).toList();
        chart(SvgChart.bars("hot-keys", "Share of a shard's recent tokens", top.stream().map(k -> k.node() + " "
            + k.policy() + " " + k.key()).toList(), top.stream().map(k -> new double[] {100 * k.share()}).toList(),
            List.of("% of the shard"), new String[] {SvgChart.BLUE}));
        final List<List<String>> rows = new ArrayList<>();
        top.forEach(k -> rows.add(List.of(k.node(), k.policy(), k.scope(), k.key(),
            String.format(Locale.ROOT, "%.1f%%", 100 * k.share()), Html.number(k.tokensPerSecond()))));
        html.append(Html.table(List.of("node", "policy", "scope", "key", "share", "tokens/s"), rows));
    }

    private void falseRejections()
    {
        html.append("<h2 id=\"false-rejections\">False rejections</h2>\n");
        if (data.falseRejectionsNote != null)
        {
            html.append(Html.note(data.falseRejectionsNote));
        }
        else
        {
            final List<List<String>> rows = new ArrayList<>();
            final List<SvgChart.Series> series = new ArrayList<>();
            int c = 0;
            for (final String policy : policiesByVolume())
            {
                final long denied = data.total(policy, ReportData.DENIED);
                final long falseRejections = data.total(policy, ReportData.FALSE_REJECTIONS);
                if (denied + falseRejections == 0)
                {
                    continue;
                }
                rows.add(List.of(policy, Html.number(falseRejections), Html.number(denied),
                    Html.percent(falseRejections, denied)));
                if (falseRejections > 0)
                {
                    series.add(new SvgChart.Series(policy,
                        doubles(data.policies().get(policy)[ReportData.FALSE_REJECTIONS]),
                        SvgChart.PALETTE[c++ % SvgChart.PALETTE.length], false));
                }
            }
            if (rows.isEmpty())
            {
                html.append(Html.note("no denials in this window, so no false rejection either"));
            }
            else
            {
                html.append(Html.table(List.of("policy", "false rejections", "denied", "false-rejection ratio"), rows));
            }
            if (!series.isEmpty())
            {
                chart(SvgChart.lines("false-rejections", "False rejections per step (accepted appeals)", "appeals",
                    data, series));
            }
        }
        html.append("<h3>Appeals</h3>\n");
        if (data.appeals.isEmpty())
        {
            html.append(Html.note(data.appealsNote == null ? "no appeal in this window" : data.appealsNote));
            return;
        }
        final List<List<String>> rows = new ArrayList<>();
        data.appeals.stream().limit(MAX_ROWS).forEach(a -> rows.add(List.of(time(a.atMillis()), a.decisionId(),
            a.policy(), Long.toString(a.version()), a.tenant(), a.route(), a.owner(), a.reason())));
        html.append(Html.table(List.of("at (UTC)", "decision", "policy", "version", "tenant", "route", "owner",
            "reason"), rows));
    }

    private void latency()
    {
        html.append("<h2 id=\"latency\">Decision latency p99</h2>\n");
        final List<SvgChart.Series> series = new ArrayList<>();
        int c = 0;
        for (final Map.Entry<String, long[]> node : data.p99().entrySet())
        {
            final double[] values = new double[node.getValue().length];
            boolean any = false;
            for (int i = 0; i < values.length; i++)
            {
                values[i] = node.getValue()[i] < 0 ? Double.NaN : node.getValue()[i];
                any |= node.getValue()[i] >= 0;
            }
            if (any)
            {
                series.add(new SvgChart.Series(node.getKey(), values, SvgChart.PALETTE[c++ % SvgChart.PALETTE.length],
                    false));
            }
        }
        if (series.isEmpty())
        {
            html.append(Html.note("no decision latency recorded in this window"));
            return;
        }
        html.append(Html.note("each node's p99 from decoding a decision frame to writing its answer, over the minute " +
            "before each point (the highest of a step)"));
        chart(SvgChart.lines("latency", "Decision latency p99 per node", "\u00b5s", data, series));
    }

    private void chart(final String figure)
    {
        charts++;
        html.append(figure);
    }

    private List<String> policiesByVolume()
    {
        return data.policies().keySet().stream().sorted(Comparator.comparingLong((String p) ->
            -(data.total(p, ReportData.ALLOWED) + data.total(p, ReportData.DENIED))).thenComparing(p -> p)).toList();
    }

    private static double[] doubles(final long[] values)
    {
        final double[] out = new double[values.length];
        for (int i = 0; i < values.length; i++)
        {
            out[i] = values[i];
        }
        return out;
    }

    private static long sum(final long[] values)
    {
        long sum = 0;
        for (final long v : values)
        {
            sum += v;
        }
        return sum;
    }

    static String time(final long millis)
    {
        return DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss", Locale.ROOT).withZone(ZoneOffset.UTC)
            .format(Instant.ofEpochMilli(millis));
    }

    static String duration(final long millis)
    {
        if (millis % 86_400_000L == 0)
        {
            return millis / 86_400_000L + " d";
        }
        if (millis % 3_600_000L == 0)
        {
            return millis / 3_600_000L + " h";
        }
        if (millis % 60_000L == 0)
        {
            return millis / 60_000L + " min";
        }
        return millis % 1000 == 0 ? millis / 1000 + " s" : millis + " ms";
    }
}
