package dev.limiter.bench.gateway;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the load generator's JSON lines (one per run) and prints the markdown tables of the note: per
 * load and configuration the median and range over rounds of throughput and latency, then the latency
 * each limiter adds (its run minus the no-limiter run of the same round and load) and the ratio of the
 * median added p99s, ours over Redis'.
 */
public final class Summary
{
    static final String NONE = "none";
    static final String REDIS = "redis";
    static final String LIMITER = "limiter";
    private static final Pattern FIELD = Pattern.compile("\"(\\w+)\":(\"[^\"]*\"|[-0-9.]+)");

    private Summary()
    {
    }

    /** One run's line: its fields, numbers as text. */
    record Run(Map<String, String> fields)
    {
        static Run parse(final String line)
        {
            final Map<String, String> fields = new LinkedHashMap<>();
            final Matcher m = FIELD.matcher(line);
            while (m.find())
            {
                final String value = m.group(2);
                fields.put(m.group(1), value.startsWith("\"") ? value.substring(1, value.length() - 1) : value);
            }
            for (final String required : List.of("config", "load", "round", "throughput", "p50Us", "p99Us", "p999Us"))
            {
                if (!fields.containsKey(required))
                {
                    throw new IllegalArgumentException("a run line without \"" + required + "\": " + line);
                }
            }
            return new Run(fields);
        }

        String text(final String name)
        {
            return fields.getOrDefault(name, "");
        }

        double number(final String name)
        {
            return Double.parseDouble(fields.getOrDefault(name, "0"));
        }
    }

    /** The median of {@code values} (the mean of the middle two for an even count); NaN for none. */
    static double median(final double[] values)
    {
        if (values.length == 0)
        {
            return Double.NaN;
        }
        final double[] sorted = values.clone();
        Arrays.sort(sorted);
        final int mid = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    }

    /** "median (min-max)" with {@code digits} decimals. */
    static String medianAndRange(final double[] values, final int digits)
    {
        if (values.length == 0)
        {
            return "-";
        }
        final double[] sorted = values.clone();
        Arrays.sort(sorted);
        final String format = "%." + digits + "f";
        return String.format(Locale.ROOT, format + " (" + format + " to " + format + ")", median(sorted), sorted[0],
            sorted[sorted.length - 1]);
    }

    /**
     * Per round, {@code field} of {@code config} minus that of the no-limiter run of the same load and
     * round; rounds missing either run are left out.
     */
    static double[] added(final List<Run> runs, final String load, final String config, final String field)
    {
        final List<Double> added = new ArrayList<>();
        for (final Run run : runs)
        {
            if (!run.text("load").equals(load) || !run.text("config").equals(config))
            {
                continue;
            }
            final Optional<Run> base = runs.stream().filter(r -> r.text("load").equals(load)
                && r.text("config").equals(NONE) && r.text("round").equals(run.text("round"))).findFirst();
            base.ifPresent(b -> added.add(run.number(field) - b.number(field)));
        }
        return added.stream().mapToDouble(Double::doubleValue).toArray();
    }

    static double[] values(final List<Run> runs, final String load, final String config, final String field)
    {
        return runs.stream().filter(r -> r.text("load").equals(load) && r.text("config").equals(config))
            .mapToDouble(r -> r.number(field)).toArray();
    }

    /** The tables, as markdown. */
    static String tables(final List<Run> runs)
    {
        final StringBuilder out = new StringBuilder();
        final TreeSet<String> loads = new TreeSet<>();
        runs.forEach(r -> loads.add(r.text("load")));
        for (final String load : loads)
        {
            out.append("\n### ").append(load).append("\n\n");
            out.append("| config | runs | throughput req/s | p50 us | p99 us | p99.9 us | 2xx | 429 | other | errors |\n");
            out.append("|---|---|---|---|---|---|---|---|---|---|\n");
            for (final String config : List.of(NONE, REDIS, LIMITER))
            {
                final double[] throughput = values(runs, load, config, "throughput");
                if (throughput.length == 0)
                {
                    continue;
                }
                out.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.0f |%n",
                    config, throughput.length, medianAndRange(throughput, 0),
                    medianAndRange(values(runs, load, config, "p50Us"), 0),
                    medianAndRange(values(runs, load, config, "p99Us"), 0),
                    medianAndRange(values(runs, load, config, "p999Us"), 0),
                    sum(values(runs, load, config, "ok")), sum(values(runs, load, config, "refused")),
                    sum(values(runs, load, config, "otherStatus")), sum(values(runs, load, config, "errors"))));
            }
            out.append("\nAdded over no limiter (same round), median (range) over rounds:\n\n");
            out.append("| config | throughput req/s | p50 us | p99 us | p99.9 us |\n|---|---|---|---|---|\n");
            for (final String config : List.of(REDIS, LIMITER))
            {
                if (added(runs, load, config, "p99Us").length == 0)
                {
                    continue;
                }
                out.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s |%n", config,
                    medianAndRange(added(runs, load, config, "throughput"), 0),
                    medianAndRange(added(runs, load, config, "p50Us"), 0),
                    medianAndRange(added(runs, load, config, "p99Us"), 0),
                    medianAndRange(added(runs, load, config, "p999Us"), 0)));
            }
            final double redis = median(added(runs, load, REDIS, "p99Us"));
            final double ours = median(added(runs, load, LIMITER, "p99Us"));
            if (!Double.isNaN(redis) && !Double.isNaN(ours))
            {
                out.append(String.format(Locale.ROOT,
                    "%nMedian added p99: limiter %.0f us, Redis %.0f us; ratio limiter/Redis %.2f "
                        + "(aim: below 0.50): %s.%n", ours, redis, ours / redis,
                    ours < redis / 2 ? "met" : "not met"));
            }
        }
        return out.toString();
    }

    private static double sum(final double[] values)
    {
        return Arrays.stream(values).sum();
    }

    public static void main(final String[] args) throws IOException
    {
        if (args.length != 1)
        {
            System.err.println("usage: Summary RESULTS.jsonl");
            System.exit(2);
        }
        final List<Run> runs = new ArrayList<>();
        for (final String line : Files.readAllLines(Path.of(args[0])))
        {
            if (line.startsWith("{"))
            {
                runs.add(Run.parse(line));
            }
        }
        System.out.print(tables(runs));
    }
}
