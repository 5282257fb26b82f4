package dev.limiter.bench;

import dev.limiter.cli.BlockingRequest;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.status.StatusReport;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.net.ssl.SSLContext;

/**
 * What one node says of itself over STATUS that a benchmark divides by its own count of
 * decisions: the process's CPU time, the decision frames it received and those it answered
 * NOT_LEADER. Read at the start and at the end of the measured window; a node that cannot be read
 * is reported with why, never left out silently.
 *
 * @param cpuNanos       CPU time of the node's process, all threads, in nanoseconds
 * @param decisionFrames ACQUIRE and BATCH_ACQUIRE frames received since the node started
 * @param redirects      frames answered NOT_LEADER since the node started
 * @param role           what the node said it is (LEADER, FOLLOWER, ...) when read: its role in the
 *                       control group when it has several Raft groups
 * @param groupsLed      of its Raft groups, how many it led when read (-1: a node without groups)
 * @param error          why the node could not be read, or null
 */
record NodeCounters(String server, long cpuNanos, long decisionFrames, long redirects, String role, int groupsLed, String error)
{
    private static final int TIMEOUT_MILLIS = 2000;

    static List<NodeCounters> readAll(final List<String> servers, final SSLContext tls)
    {
        final List<NodeCounters> all = new ArrayList<>(servers.size());
        servers.forEach(server -> all.add(read(server, tls)));
        return all;
    }

    static NodeCounters read(final String server, final SSLContext tls)
    {
        try
        {
            final BlockingRequest.Answer answer = BlockingRequest.send(server, MessageType.STATUS, new byte[0], TIMEOUT_MILLIS, tls);
            if (answer.type() != MessageType.STATUS_RESULT)
            {
                return failed(server, "answered " + MessageType.name(answer.type()) + " to STATUS");
            }
            final StatusReport status = StatusJson.parse(answer.text());
            // A node older than this generator does not report it (read as 0); a JVM without the measure says -1.
            if (status.getCpuNanos() <= 0)
            {
                return failed(server, "reports no CPU time (a node older than this generator, or a JVM without the measure)");
            }
            return new NodeCounters(server, status.getCpuNanos(), status.getDecisionFrames(), status.getRedirects(),
                status.getRole(), groupsLed(status), null);
        }
        catch (final IOException | IllegalArgumentException e)
        {
            return failed(server, e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    private static NodeCounters failed(final String server, final String why)
    {
        return new NodeCounters(server, -1, -1, -1, "", -1, why);
    }

    /** How many of the node's Raft groups it leads; -1 for a node outside a cluster (no groups). */
    private static int groupsLed(final StatusReport status)
    {
        if (status.getGroupsCount() == 0)
        {
            return -1;
        }
        return (int)status.getGroupsList().stream().filter(group -> "LEADER".equals(group.getRole())).count();
    }

    /**
     * One JSON object for the window from {@code before} to this reading: CPU microseconds per
     * decision (this node's CPU over the decisions nodes made for the generator, cluster-wide),
     * cores used, decision frames per second and redirects.
     *
     * @param nodeDecisions decisions any node made in the window (the SDK's own left out)
     * @param seconds       the window's length
     */
    String report(final NodeCounters before, final long nodeDecisions, final double seconds)
    {
        if (error != null || before.error != null)
        {
            return "{\"server\":" + quoted(server) + ",\"error\":" + quoted(error != null ? error : before.error) + "}";
        }
        final double cpuMicros = (cpuNanos - before.cpuNanos) / 1e3;
        // No decision by any node (all failed, or the SDK decided them all): no figure, not a zero.
        final String perDecision = nodeDecisions > 0 ? String.format(Locale.ROOT, "%.2f", cpuMicros / nodeDecisions) : "null";
        return String.format(Locale.ROOT,
            "{\"server\":%s,\"role\":%s,%s\"cpuUsPerDecision\":%s,\"cpuCores\":%.2f,\"decisionFramesPerSec\":%.0f,\"redirects\":%d}",
            quoted(server), quoted(role), groupsLed < 0 ? "" : "\"groupsLed\":" + groupsLed + ",", perDecision, cpuMicros / 1e6 / seconds,
            (decisionFrames - before.decisionFrames) / seconds, redirects - before.redirects);
    }

    /** A JSON string: quotes, backslashes and control characters escaped. */
    private static String quoted(final String text)
    {
        final StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if (c == '"' || c == '\\')
            {
                out.append('\\').append(c);
            }
            else if (c < 0x20)
            {
                out.append(String.format(Locale.ROOT, "\\u%04x", (int)c));
            }
            else
            {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
