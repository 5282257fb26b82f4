package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.server.control.PolicyState.Outcome;

import java.util.List;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * SDK reports of a time they decided on their own (DEGRADED commands): checked, then written to
 * the SDK trail ({@link SdkReportTrail}, inside the {@link AuditTrail} for its shared sequence),
 * never to the policy audit trail, which SDKs must not be able to flood. A window re-sent by the
 * same SDK (it sends at least once) is recorded once.
 */
final class DegradedWindows
{
    /** Longest SDK instance id a degraded window may name. */
    static final int MAX_SDK_CLIENT_LENGTH = 128;

    private final AuditTrail audit;
    private final LongSupplier setVersion;

    /** @param setVersion the policy set's version, which every reply names */
    DegradedWindows(final AuditTrail audit, final LongSupplier setVersion)
    {
        this.audit = audit;
        this.setVersion = setVersion;
    }

    /** DEGRADED: one SDK trail record unless the same SDK already reported exactly this window. */
    Outcome apply(final PolicyCommand command)
    {
        final DegradedWindow window = command.getDegraded();
        final String problem = problem(window);
        if (problem != null)
        {
            return Outcome.invalid("degraded window refused: " + problem, List.of());
        }
        final StringBuilder detail = new StringBuilder()
            .append(Timestamps.toString(window.getStart())).append(" to ")
            .append(Timestamps.toString(window.getEnd())).append(':');
        new TreeMap<>(window.getDecisionsMap())
            .forEach((key, n) -> detail.append(' ').append(key).append('=').append(n));
        audit.recordSdkReport(command, "sdk:" + window.getClient(), "no node answered this SDK in time",
            detail.toString());
        return Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion.getAsLong()).build());
    }

    /** Why a node must not take this window (checked on the node that receives it and again in apply), or null. */
    static String problem(final DegradedWindow window)
    {
        final String client = window.getClient();
        if (client.isBlank() || client.length() > MAX_SDK_CLIENT_LENGTH ||
            client.chars().anyMatch(c -> c < 0x20 || c == 0x7F))
        {
            return "client must be 1 to " + MAX_SDK_CLIENT_LENGTH + " characters, none of them control characters";
        }
        if (window.getDecisionsCount() > 1000)
        {
            return "at most 1000 decision counts, had " + window.getDecisionsCount();
        }
        if (window.getDecisionsMap().keySet().stream().anyMatch(k -> k.length() > 200))
        {
            return "a decision count's key is over 200 characters";
        }
        if (Timestamps.compare(window.getEnd(), window.getStart()) < 0)
        {
            return "its end is before its start";
        }
        return null;
    }
}
