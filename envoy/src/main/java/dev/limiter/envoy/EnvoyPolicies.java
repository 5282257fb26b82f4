package dev.limiter.envoy;

import dev.limiter.client.Descriptor;
import dev.limiter.client.PolicyCache;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.AcquireDecoder;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * What the gateway knows of the policy set its SDK holds: the {@code current_limit} Envoy is told
 * for each envoy policy, which policies are unlimited, and, when any policy has {@code replaces},
 * which policy decides a descriptor. Rebuilt from the SDK's policy cache whenever a new set
 * arrives; read by any thread.
 */
final class EnvoyPolicies
{
    private static final Logger LOG = LoggerFactory.getLogger(EnvoyPolicies.class);
    private static final long SECOND = 1_000_000_000L;
    /** Envoy's units as envoyproxy/ratelimit counts them: a month is 30 days, a year 365. */
    private static final long[] UNIT_NANOS = {SECOND, 60 * SECOND, 3_600 * SECOND, 86_400 * SECOND, 7 * 86_400 * SECOND,
        30 * 86_400 * SECOND, 365 * 86_400 * SECOND};
    private static final RateLimit.Unit[] UNITS = {RateLimit.Unit.SECOND, RateLimit.Unit.MINUTE, RateLimit.Unit.HOUR,
        RateLimit.Unit.DAY, RateLimit.Unit.WEEK, RateLimit.Unit.MONTH, RateLimit.Unit.YEAR};

    /** One set's view. {@code index} only when some policy replaces others (else null: nothing to match for). */
    private record View(Map<String, RateLimit> limits, Set<String> unlimited, Map<String, Set<String>> replaces, PolicySetIndex index)
    {
    }

    private static final View EMPTY = new View(Map.of(), Set.of(), Map.of(), null);

    private volatile View view = EMPTY;

    /** Follows {@code cache}: every set it receives replaces the view. */
    void follow(final PolicyCache cache)
    {
        cache.current().ifPresent(snapshot -> update(snapshot.policies()));
        cache.onChange(snapshot -> update(snapshot.policies()));
    }

    void update(final PolicySet set)
    {
        final Map<String, RateLimit> limits = new HashMap<>();
        final Set<String> unlimited = new HashSet<>();
        final Map<String, Set<String>> replaces = new HashMap<>();
        for (final Policy policy : set.getPoliciesList())
        {
            if (policy.getMode() == Mode.SHADOW || !policy.hasSelector() || !policy.getSelector().hasEnvoy())
            {
                continue;
            }
            if (policy.getUnlimited())
            {
                unlimited.add(policy.getId());
            }
            else
            {
                limits.put(policy.getId(), of(policy));
            }
            if (policy.getReplacesCount() > 0)
            {
                replaces.put(policy.getId(), Set.copyOf(policy.getReplacesList()));
            }
        }
        PolicySetIndex index = null;
        if (!replaces.isEmpty())
        {
            try
            {
                index = PolicySetIndex.compile(PolicySetIndex.enforcedOnly(set).build());
            }
            catch (final IllegalArgumentException e) // PolicyValidationException included
            {
                LOG.warn("the policy set (version {}) does not compile here: replaces are not applied until one does: {}", set.getVersion(),
                    e.getMessage());
            }
        }
        view = new View(Map.copyOf(limits), Set.copyOf(unlimited), Map.copyOf(replaces), index);
    }

    /** The limit to report for a decision of {@code policyId}, or null when the policy is not known here (or is unlimited). */
    RateLimit limitOf(final String policyId)
    {
        return policyId == null ? null : view.limits().get(policyId);
    }

    /** Whether {@code policyId} is an unlimited policy. */
    boolean unlimited(final String policyId)
    {
        return policyId != null && view.unlimited().contains(policyId);
    }

    /**
     * Which of {@code descriptors} (an Envoy request's, in order; null entries are skipped) a policy
     * replaces: one that decides another descriptor of the request and lists the policy that decides
     * it in its {@code replaces}, as envoyproxy/ratelimit applies them. Null when none is.
     */
    boolean[] replaced(final Descriptor[] descriptors)
    {
        final View current = view;
        if (current.index() == null)
        {
            return null;
        }
        final String[] decidedBy = new String[descriptors.length];
        final Set<String> replacedIds = new HashSet<>();
        for (int i = 0; i < descriptors.length; i++)
        {
            if (descriptors[i] != null)
            {
                decidedBy[i] = policyIdOf(current.index(), descriptors[i]);
                if (decidedBy[i] != null)
                {
                    replacedIds.addAll(current.replaces().getOrDefault(decidedBy[i], Set.of()));
                }
            }
        }
        if (replacedIds.isEmpty())
        {
            return null;
        }
        final boolean[] replaced = new boolean[descriptors.length];
        for (int i = 0; i < descriptors.length; i++)
        {
            replaced[i] = decidedBy[i] != null && replacedIds.contains(decidedBy[i]);
        }
        return replaced;
    }

    /** The id of the policy that decides an Envoy descriptor, or null when none selects it. */
    private static String policyIdOf(final PolicySetIndex index, final Descriptor descriptor)
    {
        final ByteBuf frame = Unpooled.buffer();
        try
        {
            final int start = AcquireCodec.beginBatch(frame, MessageType.ACQUIRE, 0);
            AcquireCodec.appendEntry(frame, 1, AcquireCodec.encodeEnvoyFields(descriptor.tenant(), descriptor.route()));
            AcquireCodec.finishBatch(frame, start, 1);
            final AcquireDecoder decoder = new AcquireDecoder();
            if (decoder.wrap(frame, Frame.HEADER_LENGTH, frame.writerIndex(), true) != null || !decoder.next())
            {
                return null;
            }
            final var matched = index.match(decoder);
            return matched == index.defaultPolicy() ? null : matched.forRequest(decoder).id();
        }
        finally
        {
            frame.release();
        }
    }

    /**
     * A policy's rate as Envoy states limits: requests per second, minute, hour, day, week, month
     * (30 days) or year (365 days), in its period's own unit when the period is one (as imported
     * from envoyproxy/ratelimit); per MONTH for a calendar-month window too. A period that is no
     * whole unit is converted exactly into the smallest unit that allows it (100 per 10 s: 10 per
     * second), else rounded down in the smallest unit that holds at least one request.
     */
    static RateLimit of(final Policy policy)
    {
        final RateLimit.Builder limit = RateLimit.newBuilder().setName(policy.getId());
        if (policy.getCalendarWindow() == CalendarWindow.MONTH)
        {
            return limit.setUnit(RateLimit.Unit.MONTH).setRequestsPerUnit(clamp(policy.getRate())).build();
        }
        final long rate = policy.getRate();
        final long period = policy.hasPeriod() ? policy.getPeriod().getSeconds() * SECOND + policy.getPeriod().getNanos() : SECOND;
        for (int u = 0; u < UNITS.length; u++)
        {
            if (period == UNIT_NANOS[u])
            {
                return limit.setUnit(UNITS[u]).setRequestsPerUnit(clamp(rate)).build(); // the unit it was written in
            }
        }
        int rounded = -1;
        for (int u = 0; u < UNITS.length; u++)
        {
            final double perUnit = (double)rate * UNIT_NANOS[u] / period;
            if (perUnit == Math.rint(perUnit) && perUnit >= 1)
            {
                return limit.setUnit(UNITS[u]).setRequestsPerUnit(clamp((long)perUnit)).build();
            }
            if (rounded < 0 && perUnit >= 1)
            {
                rounded = u;
            }
        }
        final int u = rounded < 0 ? UNITS.length - 1 : rounded;
        return limit.setUnit(UNITS[u]).setRequestsPerUnit(clamp((long)((double)rate * UNIT_NANOS[u] / period))).build();
    }

    /** A count as Envoy's uint32. */
    static int clamp(final long count)
    {
        return (int)Math.min(Math.max(count, 0), 0xFFFF_FFFFL);
    }
}
