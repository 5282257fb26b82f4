package dev.limiter.cli;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.Timestamp;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.LimitSpec;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.Selector;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

/**
 * How the operator commands print what the admin API answers: protobuf JSON for {@code --json},
 * and for people, columns, numbers, rates, selectors and times in one spelling everywhere.
 */
final class Output
{
    private Output()
    {
    }

    /** The message as canonical protobuf JSON (lowerCamelCase), indented: the --json output. */
    static String json(final MessageOrBuilder message)
    {
        try
        {
            return JsonFormat.printer().print(message);
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalStateException(e);
        }
    }

    /** Collapses line breaks and runs of white space so that a message stays on one line. */
    static String oneLine(final String text)
    {
        return text == null ? "" : text.replaceAll("\\s+", " ").strip();
    }

    /** A uint64 field as the number it means. */
    static String number(final long unsigned)
    {
        return Long.toUnsignedString(unsigned);
    }

    /** "100/1s": tokens per period (an unset period means 1s); "unlimited" for an unlimited policy. */
    static String rate(final Policy policy)
    {
        if (policy.getUnlimited())
        {
            return "unlimited";
        }
        if (policy.getMaxConcurrent() != 0)
        {
            // A concurrency limit: leases held at once, and how long one not given back counts.
            return policy.getMaxConcurrent() + " at once (lease " +
                (policy.hasLeaseTtl() ? period(policy.getLeaseTtl()) : "60s") + ")";
        }
        return rate(policy.getRate(), policy.getPeriod(), policy.getCalendarWindow());
    }

    /** A limit's rate: per its period, or per calendar month. */
    static String rate(final long rate, final com.google.protobuf.Duration period, final CalendarWindow calendar)
    {
        return number(rate) + "/" + (calendar == CalendarWindow.MONTH ? "month" : period(period));
    }

    /** The policy's extra limits ({@code limits}), e.g. "1000/1h FIXED_WINDOW", or "-" when it has none. */
    static String moreLimits(final Policy policy)
    {
        if (policy.getLimitsCount() == 0)
        {
            return "-";
        }
        final StringBuilder out = new StringBuilder();
        for (final LimitSpec limit : policy.getLimitsList())
        {
            out.append(out.length() == 0 ? "" : ", ").append(rate(limit.getRate(), limit.getPeriod(), limit.getCalendarWindow()))
                .append(' ').append(named(limit.getAlgorithm(), limit.getAlgorithmValue(), "TOKEN_BUCKET"));
            if (limit.getBurst() != 0 && limit.getBurst() != limit.getRate())
            {
                out.append(" burst ").append(number(limit.getBurst()));
            }
        }
        return out.toString();
    }

    /** What a request beyond the limit gets: REJECT, SOFT_OVERAGE with its percentage, or WAIT with its longest wait. */
    static String excess(final Policy policy)
    {
        switch (policy.getExcess())
        {
            case SOFT_OVERAGE:
                return "SOFT_OVERAGE " + policy.getOveragePercent() + "%";
            case WAIT:
                return "WAIT up to " + period(policy.getMaxWait());
            default:
                return named(policy.getExcess(), policy.getExcessValue(), "REJECT");
        }
    }

    /** The bucket capacity, 0 meaning "the rate". */
    static String burst(final Policy policy)
    {
        if (policy.getUnlimited())
        {
            return "-";
        }
        return number(policy.getMaxConcurrent() != 0 ? policy.getMaxConcurrent() : policy.getBurst() == 0 ? policy.getRate() : policy.getBurst());
    }

    static String period(final com.google.protobuf.Duration period)
    {
        final Duration d = Duration.ofSeconds(period.getSeconds(), period.getNanos());
        if (d.isZero())
        {
            return "1s";
        }
        if (d.getNano() == 0)
        {
            final long seconds = d.getSeconds();
            return seconds % 3600 == 0 ? seconds / 3600 + "h" : seconds % 60 == 0 ? seconds / 60 + "m" : seconds + "s";
        }
        if (d.getSeconds() == 0 && d.getNano() % 1_000_000 == 0)
        {
            return d.getNano() / 1_000_000 + "ms";
        }
        return BigDecimal.valueOf(d.getSeconds()).add(BigDecimal.valueOf(d.getNano(), 9)).stripTrailingZeros().toPlainString() + "s";
    }

    /** The enum's name, or what its unspecified value means (as the nodes read it). */
    static String named(final Enum<?> value, final int number, final String unspecifiedMeans)
    {
        if (number == 0)
        {
            return unspecifiedMeans;
        }
        // A value newer than this build knows of.
        return value.name().equals("UNRECOGNIZED") ? "?" + number : value.name();
    }

    static String scope(final Policy policy)
    {
        return named(policy.getScope(), policy.getScopeValue(), "TENANT");
    }

    static String mode(final Policy policy)
    {
        return named(policy.getMode(), policy.getModeValue(), "ENFORCE");
    }

    static String consistency(final Policy policy)
    {
        return named(policy.getConsistency(), policy.getConsistencyValue(), "FAST");
    }

    /** "tenant=acme route=/v1/orders/{id}", or "*" when the selector matches anything. */
    static String selector(final Selector selector)
    {
        final StringJoiner joined = new StringJoiner(" ");
        field(joined, "tenant", selector.getTenant());
        field(joined, "principal", selector.getPrincipal());
        field(joined, "method", selector.getMethod());
        field(joined, "route", selector.getRoute());
        field(joined, "clientIp", selector.getClientIp());
        field(joined, "region", selector.getRegion());
        if (selector.hasEnvoy())
        {
            // envoy=edge:remote_address=*,path=/login (an empty value matches any)
            final StringJoiner entries = new StringJoiner(",");
            selector.getEnvoy().getEntriesList().forEach(e -> entries.add(e.getKey() + "=" + (e.getValue().isEmpty() ? "*" : e.getValue())));
            joined.add("envoy=" + selector.getEnvoy().getDomain() + ":" + entries);
        }
        return joined.length() == 0 ? "*" : joined.toString();
    }

    private static void field(final StringJoiner joined, final String name, final String value)
    {
        if (!value.isEmpty())
        {
            joined.add(name + "=" + value);
        }
    }

    /** RFC 3339 in UTC to the second, "-" when unset. */
    static String time(final boolean present, final Timestamp timestamp)
    {
        return present ? Instant.ofEpochSecond(timestamp.getSeconds(), timestamp.getNanos()).truncatedTo(ChronoUnit.SECONDS).toString() : "-";
    }

    /**
     * Prints rows as columns two spaces apart, the last one unpadded; an empty cell shows as "-".
     *
     * @param header the column names, or null for none
     */
    static void table(final PrintStream out, final List<String> header, final List<List<String>> rows)
    {
        final List<List<String>> all = new ArrayList<>();
        if (header != null)
        {
            all.add(header);
        }
        all.addAll(rows);
        if (all.isEmpty())
        {
            return;
        }
        final int columns = all.get(0).size();
        final int[] widths = new int[columns];
        for (final List<String> row : all)
        {
            for (int i = 0; i < columns; i++)
            {
                widths[i] = Math.max(widths[i], cell(row.get(i)).length());
            }
        }
        for (final List<String> row : all)
        {
            final StringBuilder line = new StringBuilder();
            for (int i = 0; i < columns; i++)
            {
                final String cell = cell(row.get(i));
                line.append(cell);
                if (i < columns - 1)
                {
                    line.append(" ".repeat(widths[i] - cell.length() + 2));
                }
            }
            out.println(line);
        }
    }

    private static String cell(final String text)
    {
        final String flat = oneLine(text);
        return flat.isEmpty() ? "-" : flat;
    }
}
