package dev.limiter.server.admin;

import java.util.List;

/**
 * {@code GET /health/ready}: whether the node should be sent traffic. Ready is a node that serves
 * its data port, with the policy set loaded and, as a member of a cluster, every Raft group with a
 * known leader and applied to within {@link #MAX_APPLY_LAG} entries of what it knows is committed.
 * Each reason it is not ready is named.
 *
 * @param notReady why not, one sentence each; empty when ready
 */
public record Readiness(List<String> notReady)
{
    /** Committed entries a member may have left to apply and still be ready. */
    public static final long MAX_APPLY_LAG = 1000;

    public Readiness
    {
        notReady = List.copyOf(notReady);
    }

    public boolean ready()
    {
        return notReady.isEmpty();
    }

    /** One line of JSON: {@code {"status":"READY"}} or {@code {"status":"NOT_READY","reasons":[...]}}. */
    public String json()
    {
        if (ready())
        {
            return "{\"status\":\"READY\"}";
        }
        final StringBuilder json = new StringBuilder("{\"status\":\"NOT_READY\",\"reasons\":[");
        for (int i = 0; i < notReady.size(); i++)
        {
            json.append(i == 0 ? "\"" : ",\"").append(escaped(notReady.get(i))).append('"');
        }
        return json.append("]}").toString();
    }

    private static String escaped(final String text)
    {
        return text.replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
