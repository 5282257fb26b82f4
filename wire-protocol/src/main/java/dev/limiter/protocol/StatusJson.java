package dev.limiter.protocol;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.status.StatusReport;

/**
 * A node's status document ({@code status.proto}'s {@link StatusReport}) as JSON: the body of
 * STATUS_RESULT and of {@code GET /status}. The one place it is written and read.
 *
 * <p>Written as protobuf's canonical JSON on one line (lowerCamelCase names, int64 fields as
 * strings) with every field that has no presence printed, so a zero counter or an empty list
 * still appears; optional fields appear only when set. Read ignoring unknown fields, so a reader
 * takes the document of a newer node.
 */
public final class StatusJson
{
    private static final JsonFormat.Printer PRINTER =
        JsonFormat.printer().alwaysPrintFieldsWithNoPresence().omittingInsignificantWhitespace();
    private static final JsonFormat.Parser PARSER = JsonFormat.parser().ignoringUnknownFields();

    private StatusJson()
    {
    }

    /**
     * The status as one line of JSON (no line break at the end).
     *
     * @param status the node's status
     * @return the JSON document
     */
    public static String print(final StatusReport status)
    {
        try
        {
            return PRINTER.print(status);
        }
        catch (final InvalidProtocolBufferException e)
        {
            // Only Any fields with unknown types fail to print; a StatusReport has none.
            throw new IllegalStateException("cannot print a node status: " + e.getMessage(), e);
        }
    }

    /**
     * Reads a status document; fields this build does not know are ignored.
     *
     * @param json the document, as a node printed it
     * @return the status
     * @throws IllegalArgumentException when {@code json} is not a status document, with what is wrong
     */
    public static StatusReport parse(final String json)
    {
        if (json == null || json.isBlank())
        {
            throw new IllegalArgumentException("not a node status: the answer is empty");
        }
        final StatusReport.Builder status = StatusReport.newBuilder();
        try
        {
            PARSER.merge(json, status);
        }
        catch (final InvalidProtocolBufferException | RuntimeException e)
        {
            // Gson's syntax errors arrive as RuntimeExceptions; either way the message names the problem.
            throw new IllegalArgumentException("not a node status (" + e.getMessage() + "): " + excerpt(json), e);
        }
        return status.build();
    }

    private static String excerpt(final String json)
    {
        final String line = json.strip().replaceAll("\\s+", " ");
        return line.length() > 120 ? line.substring(0, 120) + "..." : line;
    }
}
