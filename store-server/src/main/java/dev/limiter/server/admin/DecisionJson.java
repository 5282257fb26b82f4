package dev.limiter.server.admin;

import dev.limiter.protocol.policy.Appeal;

import java.util.List;

/**
 * The JSON of the decision and appeal routes, written by hand so that counts and times are JSON
 * numbers (protobuf's JSON mapping prints 64-bit integers as strings):
 * <pre>
 * GET /v1/decisions/rejected
 * {"node","sampled","dropped","decisions":[{"id","atMillis","policy","version","tenant","route","reason"}]}
 * GET /v1/appeals
 * {"appeals":[{"decisionId","policy","version","tenant","route","owner","reason","atMillis","actor"}]}
 * </pre>
 */
final class DecisionJson
{
    private DecisionJson()
    {
    }

    static String page(final RejectionSamples log, final List<RejectionSamples.Rejection> decisions)
    {
        final StringBuilder out = new StringBuilder(128 + 160 * decisions.size());
        out.append("{\"node\":").append(quote(log.node()))
            .append(",\"sampled\":").append(log.sampled())
            .append(",\"dropped\":").append(log.dropped())
            .append(",\"decisions\":[");
        for (int i = 0; i < decisions.size(); i++)
        {
            out.append(i == 0 ? "" : ",");
            rejection(out, decisions.get(i));
        }
        return out.append("]}\n").toString();
    }

    static String one(final RejectionSamples log, final RejectionSamples.Rejection decision)
    {
        final StringBuilder out = new StringBuilder(200);
        rejection(out, decision);
        out.setLength(out.length() - 1);
        return out.append(",\"node\":").append(quote(log.node())).append("}\n").toString();
    }

    private static void rejection(final StringBuilder out, final RejectionSamples.Rejection d)
    {
        out.append("{\"id\":").append(quote(d.id()))
            .append(",\"atMillis\":").append(d.atMillis())
            .append(",\"policy\":").append(quote(d.policy()))
            .append(",\"version\":").append(d.version())
            .append(",\"tenant\":").append(quote(d.tenant()))
            .append(",\"route\":").append(quote(d.route()))
            .append(",\"reason\":").append(quote(d.reason()))
            .append('}');
    }

    static String appeals(final List<Appeal> appeals)
    {
        final StringBuilder out = new StringBuilder(32 + 200 * appeals.size()).append("{\"appeals\":[");
        for (int i = 0; i < appeals.size(); i++)
        {
            final Appeal a = appeals.get(i);
            out.append(i == 0 ? "{" : ",{")
                .append("\"decisionId\":").append(quote(a.getDecisionId()))
                .append(",\"policy\":").append(quote(a.getPolicy()))
                .append(",\"version\":").append(a.getVersion())
                .append(",\"tenant\":").append(quote(a.getTenant()))
                .append(",\"route\":").append(quote(a.getRoute()))
                .append(",\"owner\":").append(quote(a.getOwner()))
                .append(",\"reason\":").append(quote(a.getReason()))
                .append(",\"atMillis\":").append(a.getAt().getSeconds() * 1000 + a.getAt().getNanos() / 1_000_000)
                .append(",\"actor\":").append(quote(a.getActor()))
                .append('}');
        }
        return out.append("]}\n").toString();
    }

    /** {@code text} as a JSON string: quotes, backslashes and control characters escaped. */
    static String quote(final String text)
    {
        final StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if (c == '"' || c == '\\')
            {
                out.append('\\').append(c);
            }
            else if (c < 0x20 || c == 0x2028 || c == 0x2029)
            {
                out.append(String.format("\\u%04x", (int)c));
            }
            else
            {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
