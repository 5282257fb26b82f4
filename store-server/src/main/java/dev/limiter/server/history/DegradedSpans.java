package dev.limiter.server.history;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.AuditRecord;

import java.text.ParseException;
import java.util.ArrayList;
import java.util.List;

/**
 * The times SDKs decided on their own, from their SDK_DEGRADED_WINDOW records (the control state's
 * SDK trail, replicated: every member holds the same). Their detail starts "START to END:" in RFC
 * 3339, as the control plane's DegradedWindows writes it.
 */
final class DegradedSpans
{
    /** The audit action of an SDK's degraded window. */
    static final String ACTION = "SDK_DEGRADED_WINDOW";

    /** One degraded window, in milliseconds since the epoch, {@code start <= end}. */
    record Span(long startMillis, long endMillis)
    {
        /** Whether this window overlaps {@code [from, to)}. */
        boolean overlaps(final long from, final long to)
        {
            return startMillis < to && endMillis >= from;
        }
    }

    private DegradedSpans()
    {
    }

    /** The windows of the SDK_DEGRADED_WINDOW records among {@code records}; a record it cannot read is left out. */
    static List<Span> of(final List<AuditRecord> records)
    {
        final List<Span> spans = new ArrayList<>();
        for (final AuditRecord record : records)
        {
            if (!ACTION.equals(record.getAction()))
            {
                continue;
            }
            final String detail = record.getDetail();
            final int to = detail.indexOf(" to ");
            final int endZone = to < 0 ? -1 : detail.indexOf('Z', to);
            if (endZone < 0)
            {
                continue;
            }
            try
            {
                final long start = Timestamps.toMillis(Timestamps.parse(detail.substring(0, to)));
                final long end = Timestamps.toMillis(Timestamps.parse(detail.substring(to + 4, endZone + 1)));
                spans.add(new Span(start, Math.max(start, end)));
            }
            catch (final ParseException e)
            {
                // Not a window this build wrote: nothing to mark.
            }
        }
        return spans;
    }
}
