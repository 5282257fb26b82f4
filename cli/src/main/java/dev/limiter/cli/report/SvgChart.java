package dev.limiter.cli.report;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

/**
 * Draws the report's charts as inline SVG: lines over time, a band of marked steps over time, and
 * horizontal bars. Every drawn series, band and bar has the class {@code mark}, which the page's check
 * counts (a chart without one is empty). Text is escaped; nothing is loaded from elsewhere.
 */
final class SvgChart
{
    /** One line: its name, values per step ({@code NaN}: none), colour and whether it is dashed. */
    record Series(String name, double[] values, String color, boolean dashed)
    {
    }

    static final String GREEN = "#2e7d32";
    static final String RED = "#c62828";
    static final String BLUE = "#1565c0";
    static final String ORANGE = "#ef6c00";
    static final String[] PALETTE = {"#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#ad1457",
        "#4e342e", "#455a64", "#9e9d24"};

    private static final int WIDTH = 880;
    private static final int HEIGHT = 220;
    private static final int LEFT = 64;
    private static final int RIGHT = 16;
    private static final int TOP = 22;
    private static final int BOTTOM = 28;

    private SvgChart()
    {
    }

    /** Lines over the window's steps, with a y axis in {@code unit} and a legend. */
    static String lines(final String id, final String title, final String unit, final ReportData data,
        final List<Series> series)
    {
        double max = 0;
        for (final Series s : series)
        {
            for (final double v : s.values())
            {
                max = Double.isNaN(v) ? max : Math.max(max, v);
            }
        }
        max = niceCeiling(max);
        final StringBuilder svg = open(id, title);
        axes(svg, data, max, unit);
        final int n = data.buckets();
        for (final Series s : series)
        {
            final StringBuilder path = new StringBuilder();
            boolean pen = false;
            int drawn = 0;
            double lastX = 0;
            double lastY = 0;
            for (int i = 0; i < n; i++)
            {
                final double v = s.values()[i];
                if (Double.isNaN(v))
                {
                    pen = false;
                    continue;
                }
                lastX = x(i + 1, n);
                lastY = y(v, max);
                path.append(pen ? " L" : " M").append(fmt(lastX)).append(' ').append(fmt(lastY));
                pen = true;
                drawn++;
            }
            if (drawn == 0)
            {
                continue;
            }
            svg.append("<path class=\"mark\" fill=\"none\" stroke=\"").append(s.color())
                .append("\" stroke-width=\"1.8\"")
                .append(s.dashed() ? " stroke-dasharray=\"5 3\"" : "").append(" d=\"").append(path.toString().strip())
                .append("\"><title>").append(Html.escape(s.name())).append("</title></path>");
            if (drawn == 1)
            {
                svg.append("<circle class=\"mark\" r=\"3\" fill=\"").append(s.color()).append("\" cx=\"")
                    .append(fmt(lastX))
                    .append("\" cy=\"").append(fmt(lastY)).append("\"/>");
            }
        }
        svg.append("</svg>");
        return figure(id, title, svg, legend(series));
    }

    /** The steps marked {@code true} as a band over the window. */
    static String band(final String id, final String title, final ReportData data, final boolean[] on,
        final String color)
    {
        final StringBuilder svg = open(id, title);
        final int n = data.buckets();
        final double plotBottom = HEIGHT - BOTTOM;
        svg.append("<line x1=\"").append(LEFT).append("\" x2=\"").append(WIDTH - RIGHT).append("\" y1=\"")
            .append(fmt(plotBottom)).append("\" y2=\"").append(fmt(plotBottom)).append("\" stroke=\"#999\"/>");
        timeLabels(svg, data);
        for (int i = 0; i < n; i++)
        {
            if (!on[i])
            {
                continue;
            }
            int j = i;
            while (j + 1 < n && on[j + 1])
            {
                j++;
            }
            final double x0 = x(i, n);
            final double x1 = Math.max(x(j + 1, n), x0 + 2);
            svg.append("<rect class=\"mark\" fill=\"").append(color).append("\" x=\"").append(fmt(x0)).append("\" y=\"")
                .append(TOP + 20).append("\" width=\"").append(fmt(x1 - x0)).append("\" height=\"")
                .append(fmt(plotBottom - TOP - 40)).append("\"><title>").append(Html.escape(time(data, i) + " to " +
                    time(data, j + 1))).append("</title></rect>");
            i = j;
        }
        svg.append("</svg>");
        return figure(id, title, svg, "");
    }

    /** Horizontal bars, one per label, each split into {@code parts} (stacked) coloured by {@code colors}. */
    static String bars(final String id, final String title, final List<String> labels, final List<double[]> values,
        final List<String> parts, final String[] colors)
    {
        final int rowHeight = 22;
        final int labelWidth = 300;
        final int height = TOP + rowHeight * labels.size() + 8;
        double max = 0;
        for (final double[] row : values)
        {
            double sum = 0;
            for (final double v : row)
            {
                sum += v;
            }
            max = Math.max(max, sum);
        }
        final StringBuilder svg = new StringBuilder("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ")
            .append(WIDTH).append(' ').append(height).append("\" role=\"img\" aria-label=\"").append(Html.escape(title))
            .append("\">");
        final double span = WIDTH - RIGHT - labelWidth - 80;
        for (int r = 0; r < labels.size(); r++)
        {
            final double top = TOP + r * rowHeight;
            String label = labels.get(r);
            label = label.length() > 48 ? label.substring(0, 47) + "\u2026" : label;
            svg.append("<text x=\"").append(labelWidth - 6).append("\" y=\"").append(fmt(top + 15))
                .append("\" text-anchor=\"end\">").append(Html.escape(label)).append("</text>");
            double x = labelWidth;
            double sum = 0;
            for (int p = 0; p < values.get(r).length; p++)
            {
                final double v = values.get(r)[p];
                sum += v;
                final double w = max <= 0 ? 0 : v / max * span;
                if (v > 0)
                {
                    svg.append("<rect class=\"mark\" fill=\"").append(colors[p % colors.length]).append("\" x=\"")
                        .append(fmt(x)).append("\" y=\"").append(fmt(top + 3)).append("\" width=\"")
                        .append(fmt(Math.max(w, 1))).append("\" height=\"").append(rowHeight - 6).append("\"><title>")
                        .append(Html.escape(labels.get(r) + ": " + parts.get(p) + " "
                            + Html.number(v))).append("</title></rect>");
                }
                x += w;
            }
            svg.append("<text x=\"").append(fmt(x + 6)).append("\" y=\"").append(fmt(top + 15)).append("\">")
                .append(Html.number(sum)).append("</text>");
        }
        svg.append("</svg>");
        final StringBuilder legend = new StringBuilder("<div class=\"legend\">");
        for (int p = 0; p < parts.size(); p++)
        {
            legend.append("<span><i style=\"background:").append(colors[p % colors.length]).append("\"></i>")
                .append(Html.escape(parts.get(p))).append("</span>");
        }
        return figure(id, title, svg, legend.append("</div>").toString());
    }

    private static StringBuilder open(final String id, final String title)
    {
        return new StringBuilder("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ").append(WIDTH).append(' ')
            .append(HEIGHT).append("\" role=\"img\" aria-label=\"").append(Html.escape(title)).append("\">");
    }

    private static String figure(final String id, final String title, final StringBuilder svg, final String legend)
    {
        return "<figure class=\"chart\" id=\"" + Html.escape(id) + "\"><figcaption>" + Html.escape(title) +
            "</figcaption>" + svg + legend + "</figure>\n";
    }

    private static String legend(final List<Series> series)
    {
        final StringBuilder legend = new StringBuilder("<div class=\"legend\">");
        for (final Series s : series)
        {
            legend.append("<span><i style=\"background:").append(s.color()).append("\"").append(s.dashed() ?
                " class=\"dashed\"" : "").append("></i>").append(Html.escape(s.name())).append("</span>");
        }
        return legend.append("</div>").toString();
    }

    private static void axes(final StringBuilder svg, final ReportData data, final double max, final String unit)
    {
        for (int t = 0; t <= 4; t++)
        {
            final double v = max * t / 4;
            final double yy = y(v, max);
            svg.append("<line x1=\"").append(LEFT).append("\" x2=\"").append(WIDTH - RIGHT).append("\" y1=\"")
                .append(fmt(yy)).append("\" y2=\"").append(fmt(yy)).append("\" stroke=\"").append(t == 0 ? "#999"
                    : "#e3e3e3")
                .append("\"/><text x=\"").append(LEFT - 6).append("\" y=\"").append(fmt(yy + 4))
                .append("\" text-anchor=\"end\">").append(Html.escape(Html.number(v))).append("</text>");
        }
        svg.append("<text x=\"4\" y=\"").append(TOP - 10).append("\" class=\"unit\">").append(Html.escape(unit))
            .append("</text>");
        timeLabels(svg, data);
    }

    private static void timeLabels(final StringBuilder svg, final ReportData data)
    {
        final int n = data.buckets();
        for (int t = 0; t <= 4; t++)
        {
            final int step = (int)Math.round((double)n * t / 4);
            svg.append("<text x=\"").append(fmt(x(step, n))).append("\" y=\"").append(HEIGHT - 8)
                .append("\" text-anchor=\"").append(t == 0 ? "start" : t == 4 ? "end" : "middle").append("\">")
                .append(Html.escape(time(data, step))).append("</text>");
        }
    }

    /** The end of step {@code i} (its start for 0), UTC, with the day when the window spans more than one. */
    private static String time(final ReportData data, final int i)
    {
        final long at = data.fromMillis() + (long)i * data.stepMillis();
        final String pattern = data.toMillis() - data.fromMillis() > 86_400_000L ? "MM-dd HH:mm" :
            data.stepMillis() < 60_000 && data.toMillis() - data.fromMillis() <= 3_600_000L ? "HH:mm:ss" : "HH:mm";
        return DateTimeFormatter.ofPattern(pattern,
            Locale.ROOT).withZone(ZoneOffset.UTC).format(Instant.ofEpochMilli(at));
    }

    private static double x(final int step, final int steps)
    {
        return LEFT + (WIDTH - LEFT - RIGHT) * (double)step / Math.max(1, steps);
    }

    private static double y(final double value, final double max)
    {
        final double plot = HEIGHT - TOP - BOTTOM;
        return HEIGHT - BOTTOM - (max <= 0 ? 0 : value / max * plot);
    }

    /** 1, 2, 5 times a power of ten, at least {@code value} (1 for nothing). */
    static double niceCeiling(final double value)
    {
        if (value <= 0)
        {
            return 1;
        }
        final double magnitude = Math.pow(10, Math.floor(Math.log10(value)));
        for (final double m : new double[] {1, 2, 5, 10})
        {
            if (m * magnitude >= value)
            {
                return m * magnitude;
            }
        }
        return 10 * magnitude;
    }

    private static String fmt(final double v)
    {
        return String.format(Locale.ROOT, "%.1f", v);
    }
}
