package dev.limiter.cli.pilot;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The seed's exit criterion "every false rejection has a reason", for the pilot's traffic: every
 * refused request of a well-behaved tenant is a candidate, and each gets a reason or stays
 * unexplained. Explained: the SDK decided alone while no node answered (its reason code), or the
 * tenant's own traffic exceeded the policy in the pilot's model of it. Any other candidate is
 * appealed as a false rejection when the node keeps rejected decisions and takes appeals
 * (issue 52's {@code /decisions/rejected} and {@code /appeals}); where it does not, it stays
 * unexplained and the review says why.
 */
final class FalseRejectionReview
{
    /** How the candidates were classified. */
    record Result(long candidates, Map<String, Long> byCategory, long unexplained, String appeals, List<Map<String,
        Object>> examples)
    {
    }

    private static final int EXAMPLES = 20;

    private final AdminHttp admin;
    private final Trace trace;

    FalseRejectionReview(final AdminHttp admin, final Trace trace)
    {
        this.admin = admin;
        this.trace = trace;
    }

    /** Classifies the candidates of {@code phases}; appeals the unexplained ones where the node takes appeals. */
    Result review(final List<PhaseTraffic.Result> phases)
    {
        final Map<String, Long> categories = new LinkedHashMap<>();
        final List<Map<String, Object>> examples = new ArrayList<>();
        final Set<String> appealed = new HashSet<>();
        long candidates = 0;
        long unexplained = 0;
        final String appeals = appealsAvailability();
        for (final PhaseTraffic.Result phase : phases)
        {
            for (final Map.Entry<String, TenantTally> entry : phase.tenants().entrySet())
            {
                final TenantTally tally = entry.getValue();
                if (!trace.wellBehaved(entry.getKey()))
                {
                    continue;
                }
                synchronized (tally)
                {
                    candidates += tally.rejections.size() + tally.rejectionsNotKept;
                    unexplained += tally.rejectionsNotKept; // not kept, so not reviewed: no reason can be given
                    for (final TenantTally.Rejection rejection : tally.rejections)
                    {
                        final String[] verdict = classify(phase.phase(), entry.getKey(), rejection, appeals, appealed);
                        categories.merge(verdict[0], 1L, Long::sum);
                        if (verdict[0].equals("unexplained"))
                        {
                            unexplained++;
                        }
                        if (examples.size() < EXAMPLES)
                        {
                            final Map<String, Object> example = new LinkedHashMap<>();
                            example.put("phase", phase.phase());
                            example.put("tenant", entry.getKey());
                            example.put("atMillis", rejection.atMillis());
                            example.put("limiterReason", rejection.reason());
                            example.put("policy", rejection.policyId() + " v" + rejection.policyVersion());
                            example.put("category", verdict[0]);
                            example.put("reason", verdict[1]);
                            examples.add(example);
                        }
                    }
                }
            }
        }
        return new Result(candidates, categories, unexplained, appeals, examples);
    }

    /** {category, reason} of one candidate. */
    private String[] classify(final String phase, final String tenant, final TenantTally.Rejection rejection,
        final String appeals,
                              final Set<String> appealed)
    {
        if (rejection.degraded())
        {
            return new String[] {"degraded", "decided by the SDK alone while no node answered ("
                + rejection.reason() + ")"};
        }
        if (rejection.modelRefusedToo())
        {
            return new String[] {"over-its-limit", String.format(Locale.ROOT,
                "the tenant's own traffic exceeded %d/s with a "
                + "burst of %d (the pilot's model of policy %s refused it too)", trace.policy().rate(),
                trace.policy().burst(), trace.policy().id())};
        }
        if (!appeals.equals("available"))
        {
            return new String[] {"unexplained", "within its limit in the pilot's model; not appealed: " + appeals};
        }
        final String reason = "pilot (" + phase + "): tenant " + tenant
            + " was refused while its own traffic stayed within " + trace.policy().rate() + "/s and a burst of "
            + trace.policy().burst();
        final String decisionId = decisionId(tenant, rejection, appealed);
        if (decisionId == null)
        {
            return new String[] {"unexplained",
                "within its limit in the pilot's model; its decision was not in the node's sample "
                + "of rejected decisions, so it could not be appealed"};
        }
        final JsonObject body = new JsonObject();
        body.addProperty("decisionId", decisionId);
        body.addProperty("owner", trace.policy().owner());
        body.addProperty("reason", reason);
        body.addProperty("policy", rejection.policyId());
        body.addProperty("version", rejection.policyVersion());
        body.addProperty("tenant", tenant);
        body.addProperty("route", trace.route());
        final AdminHttp.Answer answer = admin.postApi("/appeals", body.toString());
        if (!answer.ok())
        {
            return new String[] {"unexplained", "the appeal of decision " + decisionId + " was refused (HTTP "
                + answer.status() + ": " + oneLine(answer.body()) + ")"};
        }
        appealed.add(decisionId);
        return new String[] {"appealed", "appealed as decision " + decisionId + ": " + reason};
    }

    /**
     * The id of the node's sampled rejected decision of {@code tenant} nearest in time (within 2 s), not appealed yet.
     */
    private String decisionId(final String tenant, final TenantTally.Rejection rejection, final Set<String> appealed)
    {
        final AdminHttp.Answer answer = admin.getApi("/decisions/rejected?limit=1000&tenant=" + encode(tenant)
            + "&policy=" + encode(rejection.policyId()));
        if (!answer.ok())
        {
            return null;
        }
        String best = null;
        long bestDistance = 2_000;
        try
        {
            final JsonArray decisions = JsonParser.parseString(answer.body()).getAsJsonObject()
                .getAsJsonArray("decisions");
            for (final JsonElement element : decisions)
            {
                final JsonObject decision = element.getAsJsonObject();
                final String id = decision.get("id").getAsString();
                final long distance = Math.abs(decision.get("atMillis").getAsLong() - rejection.atMillis());
                if (!appealed.contains(id) && distance <= bestDistance)
                {
                    best = id;
                    bestDistance = distance;
                }
            }
        }
        catch (final JsonParseException | IllegalStateException | NullPointerException |
                     UnsupportedOperationException e)
        {
            return null;
        }
        return best;
    }

    /** "available", or why appeals cannot be made against this cluster. */
    private String appealsAvailability()
    {
        final AdminHttp.Answer appeals = admin.getApi("/appeals?since=0");
        if (appeals.status() == 0)
        {
            return "no admin endpoint answered (" + oneLine(appeals.body()) + ")";
        }
        if (!appeals.ok())
        {
            return "this node's admin API has no /appeals (HTTP " + appeals.status() + " from " + appeals.address() +
                "; an older build)";
        }
        final AdminHttp.Answer decisions = admin.getApi("/decisions/rejected?limit=1");
        if (!decisions.ok())
        {
            return "this node's admin API has no /decisions/rejected (HTTP " + decisions.status()
                + "), so no decision ids to appeal";
        }
        return "available";
    }

    private static String encode(final String text)
    {
        return URLEncoder.encode(text, StandardCharsets.UTF_8);
    }

    static String oneLine(final String text)
    {
        final String line = text == null ? "" : text.strip().replaceAll("\\s+", " ");
        return line.length() > 200 ? line.substring(0, 200) + "..." : line;
    }
}
