package dev.limiter.cli.pilot;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code summary.html}: the pilot's own page, self-contained (no script, no external file): the exit
 * criteria with their verdicts, the backend's 5xx, p99 and the rejection rate before and after by
 * tenant (with bars), each phase's totals, the shadow's predictions against what enforcing refused,
 * the drills and the false-rejection review. Every text from the run is HTML-escaped.
 */
final class SummaryPage
{
    private SummaryPage()
    {
    }

    static void write(final Path file, final Findings f, final List<ExitCriteria.Criterion> criteria,
        final int exit) throws IOException
    {
        final StringBuilder h = new StringBuilder(16_384);
        h.append("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>limiter pilot</title><style>")
            .append("body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1100px}")
            .append("table{border-collapse:collapse;margin:1em 0}")
            .append("td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}")
            .append("th{background:#f3f3f3}")
            .append(".PASS{background:#d9f2d9}.FAIL{background:#f7d4d4}.NOT_RUN{background:#f5edcc}")
            .append(".bar{display:inline-block;height:10px;background:#c0392b;margin-right:4px}")
            .append(".after{background:#2e86c1}")
            .append("</style></head><body>\n<h1>limiter pilot</h1>\n<p>")
            .append(esc(String.format(Locale.ROOT,
                "Started %s; %.2f minutes (phases of %.1f s); policy %s (%d/s, burst %d per tenant) on "
                + "%s; backend capacity %.0f requests/s. Exit %d.", java.time.Instant.ofEpochMilli(f.startedAtMillis),
                f.minutes, f.phaseSeconds, f.trace.policy().id(), f.trace.policy().rate(), f.trace.policy().burst(),
                f.trace.route(), f.trace.backend().capacityPerSecond(), exit)))
            .append("</p>\n<h2>Exit criteria</h2>\n<table><tr><th>verdict</th><th>criterion</th>")
            .append("<th>what it rests on</th></tr>\n");
        for (final ExitCriteria.Criterion c : criteria)
        {
            h.append("<tr><td class=\"").append(c.verdict()).append("\">").append(c.verdict()).append("</td><td>")
                .append(esc(c.requirement())).append("</td><td>").append(esc(c.detail())).append("</td></tr>\n");
        }
        h.append("</table>\n");
        beforeAfter(h, f);
        phases(h, f);
        shadow(h, f);
        h.append("<h2>Drills</h2>\n<table><tr><th>drill</th><th>verdict</th><th>evidence or reason</th></tr>\n");
        for (final PilotDrills.Outcome d : f.drills)
        {
            h.append("<tr><td>").append(esc(d.drill())).append("</td><td class=\"").append(d.verdict()).append("\">")
                .append(d.verdict()).append("</td><td>").append(esc(d.reason().isEmpty() ? d.evidence().toString()
                    : d.reason()))
                .append("</td></tr>\n");
        }
        h.append("</table>\n<h2>False-rejection candidates</h2>\n");
        if (f.falseRejections != null)
        {
            h.append("<p>").append(esc(f.falseRejections.candidates() + " candidates "
                + f.falseRejections.byCategory() + ", " + f.falseRejections.unexplained()
                + " without a reason; appeals: " + f.falseRejections.appeals())).append("</p>\n<ul>");
            for (final Map<String, Object> example : f.falseRejections.examples())
            {
                h.append("<li>").append(esc(example.toString())).append("</li>");
            }
            h.append("</ul>\n");
        }
        h.append("<h2>Report</h2>\n<p>").append(esc((f.reportFile.isEmpty() ? "" : f.reportFile + ": ") + f.reportNote))
            .append("</p>\n</body></html>\n");
        Files.writeString(file, h.toString(), StandardCharsets.UTF_8);
    }

    private static void beforeAfter(final StringBuilder h, final Findings f)
    {
        final PhaseTraffic.Result before = f.phase(Findings.BASELINE);
        final PhaseTraffic.Result after = f.phase(Findings.ALL_TENANTS);
        if (before == null || after == null)
        {
            return;
        }
        h.append("<h2>Before and after, by tenant</h2>\n<p>Before: the baseline phase (no enforcement). After: the " +
            "policy enforced for every tenant. Backend figures are the sample backend's own.</p>\n<table><tr>" +
            "<th>tenant</th><th>backend 5xx</th>" +
            "<th>backend p99 (ms)</th><th>rejection rate</th></tr>\n");
        for (final String tenant : before.tenants().keySet())
        {
            row(h, tenant + (f.trace.wellBehaved(tenant) ? " (well behaved)" : ""), PhaseFigures.of(before, tenant),
                PhaseFigures.of(after, tenant));
        }
        row(h, "all", PhaseFigures.total(before), PhaseFigures.total(after));
        h.append("</table>\n");
    }

    private static void row(final StringBuilder h, final String name, final PhaseFigures b, final PhaseFigures a)
    {
        h.append("<tr><td>").append(esc(name)).append("</td><td>")
            .append(bars(b.backendErrorRate(), a.backendErrorRate(), 1, "%.1f%%", 100)).append("</td><td>")
            .append(bars(b.backendP99Millis(), a.backendP99Millis(), Math.max(1, Math.max(b.backendP99Millis(),
                a.backendP99Millis())), "%.1f", 1)).append("</td><td>")
            .append(bars(b.rejectionRate(), a.rejectionRate(), 1, "%.1f%%", 100)).append("</td></tr>\n");
    }

    private static String bars(final double before, final double after, final double max, final String format,
        final double scale)
    {
        return String.format(Locale.ROOT, "<span class=\"bar\" style=\"width:%dpx\"></span>" + format + " &rarr; " +
            "<span class=\"bar after\" style=\"width:%dpx\"></span>" + format, Math.round(120 * before / max),
                before * scale,
            Math.round(120 * after / max), after * scale);
    }

    private static void phases(final StringBuilder h, final Findings f)
    {
        h.append("<h2>Phases</h2>\n<table><tr><th>phase</th><th>version</th><th>offered</th><th>rejected</th>" +
            "<th>backend requests</th>" +
            "<th>5xx</th><th>backend p99 ms</th><th>max queue</th><th>decision p99 ms</th><th>SDK alone</th></tr>\n");
        for (final PhaseTraffic.Result p : f.phases.values())
        {
            final PhaseFigures t = PhaseFigures.total(p);
            h.append(String.format(Locale.ROOT,
                "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%.1f</td>"
                + "<td>%d</td><td>%.2f</td><td>%d</td></tr>%n", esc(p.phase()), f.versions.getOrDefault(p.phase(),
                0L), t.offered(), t.denied(), t.backendRequests(), t.backend5xx(), t.backendP99Millis(),
                p.backend().maxQueueDepth(), t.decisionP99Millis(), t.degraded()));
        }
        h.append("</table>\n");
    }

    private static void shadow(final StringBuilder h, final Findings f)
    {
        final PhaseTraffic.Result shadow = f.phase(Findings.SHADOW);
        if (shadow == null)
        {
            return;
        }
        final PhaseTraffic.Result enforced = f.phase(Findings.ALL_TENANTS);
        h.append("<h2>Shadow: predicted against enforced</h2>\n<p>")
            .append(esc("The nodes counted " + f.shadowWouldDeny +
            " would-deny decisions of the shadow version. Comparison: " + (f.comparison != null
                ? f.comparison.toString() :
            f.comparisonNote))).append("</p>\n<table><tr><th>tenant</th><th>predicted rejections (shadow phase)</th>" +
            "<th>enforced rejections (all tenants)</th></tr>\n");
        for (final Map.Entry<String, TenantTally> entry : shadow.tenants().entrySet())
        {
            final long predicted;
            synchronized (entry.getValue())
            {
                predicted = entry.getValue().modelRefused;
            }
            h.append("<tr><td>").append(esc(entry.getKey())).append("</td><td>").append(predicted).append("</td><td>")
                .append(enforced == null ? "-" : String.valueOf(PhaseFigures.of(enforced,
                    entry.getKey()).denied())).append("</td></tr>\n");
        }
        h.append("</table>\n");
    }

    static String esc(final String text)
    {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
