package dev.limiter.cli.report;

import java.util.List;
import java.util.Locale;

/** The report's HTML helpers: escaping (every text from a node or Prometheus passes here), numbers and tables. */
final class Html
{
    private Html()
    {
    }

    /** {@code text} safe in HTML text and attribute values. */
    static String escape(final String text)
    {
        final StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            switch (c)
            {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> out.append(c < 0x20 && c != '\n' && c != '\t' ? '\uFFFD' : c);
            }
        }
        return out.toString();
    }

    /** 1234567 as "1,234,567", 0.25 as "0.25", 1.5e6 as "1,500,000". */
    static String number(final double value)
    {
        if (value == Math.rint(value) && Math.abs(value) < 1e15)
        {
            return String.format(Locale.ROOT, "%,d", (long)value);
        }
        return String.format(Locale.ROOT, Math.abs(value) >= 100 ? "%,.0f" : "%.2f", value);
    }

    /** {@code part / whole} as a percentage with two decimals, or "-" when {@code whole} is 0. */
    static String percent(final long part, final long whole)
    {
        return whole == 0 ? "-" : String.format(Locale.ROOT, "%.2f%%", 100.0 * part / whole);
    }

    /** A table: a header row and rows of cells, every cell escaped; cells that look numeric align right. */
    static String table(final List<String> header, final List<List<String>> rows)
    {
        final StringBuilder html = new StringBuilder("<table><thead><tr>");
        header.forEach(h -> html.append("<th>").append(escape(h)).append("</th>"));
        html.append("</tr></thead><tbody>");
        for (final List<String> row : rows)
        {
            html.append("<tr>");
            for (final String cell : row)
            {
                html.append(cell.matches("[-0-9.,%]+") ? "<td class=\"n\">"
                    : "<td>").append(escape(cell)).append("</td>");
            }
            html.append("</tr>");
        }
        return html.append("</tbody></table>\n").toString();
    }

    /** A paragraph saying plainly why a section shows nothing. */
    static String note(final String text)
    {
        return "<p class=\"note\">" + escape(text) + "</p>\n";
    }
}
