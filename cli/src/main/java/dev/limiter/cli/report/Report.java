package dev.limiter.cli.report;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;

/**
 * Writes the cluster's report: reads every node's history (or Prometheus), merges it and writes one
 * self-contained HTML file. {@code ./limiter report} and {@code ./limiter pilot} call it.
 */
public final class Report
{
    /** The most steps a chart has: a longer window gets wider steps (whole multiples of the source's interval). */
    static final int MAX_STEPS = 720;
    /** The narrowest step asked of Prometheus (its default scrape interval). */
    static final long PROMETHEUS_MIN_STEP_MILLIS = 15_000;
    /** The longest window. */
    static final Duration MAX_WINDOW = Duration.ofDays(31);

    private static final Pattern DURATION = Pattern.compile("(\\d{1,9})(ms|s|m|h|d)");

    /**
     * What to report and where from.
     *
     * @param admin           the nodes' admin addresses ({@code host:port} or a URL)
     * @param skipUnreachable whether an address nobody answers at is skipped (the default list) rather than an error
     * @param token           the admin token
     * @param tls             TLS for https admin addresses, or null
     * @param timeout         connect and answer timeout per call
     * @param since           the window: the report covers the last {@code since}
     * @param out             the HTML file to write
     * @param prometheus      Prometheus' base URL to read the series from, or null for the nodes' history
     */
    public record Options(List<String> admin, boolean skipUnreachable, String token, SSLContext tls, Duration timeout,
        Duration since, Path out, String prometheus)
    {
    }

    /** What was written: the file, the window's decisions, its charts' count and what could not be shown. */
    public record Written(Path out, long decisions, int charts, List<String> notes)
    {
    }

    private Report()
    {
    }

    /** The report of the last {@code since} of the nodes at {@code admin}, written to {@code out}. */
    public static Written write(final List<String> admin, final String token, final Duration since, final Path out)
        throws ReportException
    {
        return write(new Options(admin, false, token, null, Duration.ofSeconds(5), since, out, null),
            System::currentTimeMillis);
    }

    /** The report {@code options} ask for, {@code wallMillis} telling the time. */
    public static Written write(final Options options, final LongSupplier wallMillis) throws ReportException
    {
        checkWindow(options.since());
        checkOut(options.out());
        final List<HttpReader> admins = new ArrayList<>();
        for (final String address : options.admin())
        {
            admins.add(new HttpReader(base(address, options.tls() != null, "--admin"), options.token(), options.tls(),
                options.timeout()));
        }
        if (admins.isEmpty())
        {
            throw ReportException.usage("--admin is empty: give the admin address of every node, e.g. 127.0.0.1:7481");
        }
        final long now = wallMillis.getAsLong();
        final long since = options.since().toMillis();
        final long from = now - since;
        final ReportData data;
        if (options.prometheus() == null)
        {
            final NodeSources nodes = NodeSources.read(admins, options.skipUnreachable(), from);
            final long interval = nodes.intervalMillis(10_000);
            data = new ReportData(from, now, step(since, interval), "the nodes' own history (GET /v1/history)");
            nodes.describe(data);
            nodes.addHistory(data);
            snapshots(nodes, data, from);
        }
        else
        {
            final HttpReader prometheus = new HttpReader(base(options.prometheus(), false, "--prometheus"), null, null,
                options.timeout());
            data = new ReportData(from, now, step(since, PROMETHEUS_MIN_STEP_MILLIS), "Prometheus at " +
                prometheus.base() + " (query_range)");
            NodeSources nodes = null;
            try
            {
                nodes = NodeSources.read(admins, true, from);
            }
            catch (final ReportException e)
            {
                data.notes.add("no node's admin API answered (" + e.getMessage()
                    + "): hot keys, the shadow comparison, " + "sampled rejections and appeals are not shown");
            }
            if (nodes != null)
            {
                nodes.describe(data);
            }
            new PrometheusSource(prometheus).read(data);
            if (nodes != null)
            {
                snapshots(nodes, data, from);
            }
        }
        final String page = HtmlReport.render(data, now);
        writeAtomically(options.out(), page);
        final int charts = page.split("<figure class=\"chart\"", -1).length - 1;
        return new Written(options.out(), data.decisions(), charts, List.copyOf(data.notes));
    }

    private static void snapshots(final NodeSources nodes, final ReportData data,
        final long from) throws ReportException
    {
        nodes.addHotKeys(data);
        nodes.addCompare(data, from);
        nodes.addRejected(data, from);
        nodes.addAppeals(data, from);
        nodes.addDegradedReports(data, from);
    }

    /** A step of whole {@code interval}s giving at most {@link #MAX_STEPS} steps. */
    static long step(final long windowMillis, final long intervalMillis)
    {
        final long intervals = Math.max(1, (windowMillis
            + intervalMillis * MAX_STEPS - 1) / (intervalMillis * MAX_STEPS));
        return intervals * intervalMillis;
    }

    /**
     * A window such as {@code 30m}, {@code 24h}, {@code 7d} (also {@code s} and {@code ms}).
     *
     * @throws ReportException (usage) naming what was wrong
     */
    public static Duration parseSince(final String text) throws ReportException
    {
        final Matcher m = DURATION.matcher(text == null ? "" : text.strip().toLowerCase(Locale.ROOT));
        if (!m.matches())
        {
            throw ReportException.usage("--since '" + text + "' is not a duration: give a number and a unit, such as " +
                "30m, 24h or 7d (units: ms, s, m, h, d)");
        }
        final long n = Long.parseLong(m.group(1));
        final Duration since = switch (m.group(2))
        {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
        };
        checkWindow(since);
        return since;
    }

    private static void checkWindow(final Duration since) throws ReportException
    {
        if (since.toMillis() < 1_000 || since.compareTo(MAX_WINDOW) > 0)
        {
            throw ReportException.usage("--since must be from 1s to " + MAX_WINDOW.toDays() + "d, was " + since);
        }
    }

    private static void checkOut(final Path out) throws ReportException
    {
        if (out == null)
        {
            throw ReportException.usage("--out is missing: name the HTML file to write, e.g. --out report.html");
        }
        if (Files.isDirectory(out))
        {
            throw ReportException.usage("--out " + out + " is a directory: name a file, e.g. "
                + out.resolve("report.html"));
        }
        final Path parent = out.toAbsolutePath().getParent();
        if (parent == null || !Files.isDirectory(parent))
        {
            throw ReportException.usage("--out " + out + ": its directory " + parent + " does not exist");
        }
        if (!Files.isWritable(parent) || Files.exists(out) && !Files.isWritable(out))
        {
            throw ReportException.usage("--out " + out + " cannot be written (no permission to write " +
                (Files.exists(out) ? out : parent) + ")");
        }
    }

    /** Writes the page beside {@code out}, then moves it there: a reader never sees half a report. */
    private static void writeAtomically(final Path out, final String page) throws ReportException
    {
        final Path absolute = out.toAbsolutePath();
        Path temporary = null;
        try
        {
            temporary = Files.createTempFile(absolute.getParent(), ".report-", ".html.tmp");
            Files.writeString(temporary, page, StandardCharsets.UTF_8);
            Files.move(temporary, absolute, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        catch (final AccessDeniedException e)
        {
            throw ReportException.failed("cannot write --out " + out + ": permission denied (" + e.getFile() + ")");
        }
        catch (final IOException e)
        {
            throw ReportException.failed("cannot write --out " + out + ": " + e);
        }
        finally
        {
            if (temporary != null)
            {
                try
                {
                    Files.deleteIfExists(temporary);
                }
                catch (final IOException ignored)
                {
                    // Left behind only if the disk failed too.
                }
            }
        }
    }

    /** {@code host:port} or a URL as {@code scheme://host:port}, no trailing slash. */
    static String base(final String address, final boolean https, final String option) throws ReportException
    {
        final String trimmed = address.strip().replaceAll("/+$", "");
        final String withScheme = trimmed.startsWith("http://") || trimmed.startsWith("https://") ? trimmed :
            (https ? "https://" : "http://") + trimmed;
        try
        {
            final java.net.URI uri = new java.net.URI(withScheme);
            if (uri.getHost() != null && uri.getPort() > 0 && (uri.getRawPath() == null
                || uri.getRawPath().isEmpty()) && uri.getRawQuery() == null && uri.getRawUserInfo() == null)
            {
                return withScheme;
            }
        }
        catch (final java.net.URISyntaxException e)
        {
            // Reported below.
        }
        throw ReportException.usage(option + " '" + address + "' is not HOST:PORT or http://HOST:PORT");
    }
}
