package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.regex.Pattern;

/** What makes an exemption valid, how its selector matches, and how it reads in the audit trail: pure functions. */
final class ExemptionRules
{
    private static final Pattern EXEMPTION_ID = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");

    private ExemptionRules()
    {
    }

    /**
     * Why {@code wanted} cannot be created at {@code at} (epoch milliseconds) beside the {@code active}
     * exemptions; empty when it can.
     */
    static List<String> problems(final Exemption wanted, final long at, final Collection<Exemption> active)
    {
        final List<String> errors = new ArrayList<>();
        if (!EXEMPTION_ID.matcher(wanted.getId()).matches())
        {
            errors.add("exemption.id: '" + wanted.getId() + "' must match [a-z0-9][a-z0-9._-]{0,62}");
        }
        if (wanted.getTenant().isBlank() && wanted.getPrincipal().isBlank() && wanted.getRoute().isBlank())
        {
            errors.add("exemption: set at least one of tenant, principal (with its tenant) or route; an exemption for everything is not allowed");
        }
        if (!wanted.getPrincipal().isBlank() && wanted.getTenant().isBlank())
        {
            errors.add("exemption.principal: needs the tenant too (a principal is unique only within its tenant)");
        }
        if (wanted.getOwner().isBlank())
        {
            errors.add("exemption.owner: required (the team or person answerable for it)");
        }
        if (wanted.getReason().isBlank())
        {
            errors.add("exemption.reason: required (why these requests may bypass their limits)");
        }
        final long expires = PolicyVersions.millis(wanted.getExpiresAt());
        if (!wanted.hasExpiresAt() || expires <= at)
        {
            errors.add("exemption.expiresAt: required, and in the future (was " +
                (wanted.hasExpiresAt() ? Timestamps.toString(wanted.getExpiresAt()) : "absent") + ")");
        }
        else if (expires - at > PolicyState.MAX_EXEMPTION_MILLIS)
        {
            errors.add("exemption.expiresAt: at most 90 days ahead; renew it later instead");
        }
        if (errors.isEmpty())
        {
            try
            {
                selectorOf(wanted);
            }
            catch (final PolicyValidationException e)
            {
                errors.addAll(e.errors());
            }
        }
        if (active.stream().anyMatch(e -> e.getId().equals(wanted.getId())))
        {
            errors.add("exemption.id: '" + wanted.getId() + "' is active; remove it first or choose another id");
        }
        for (final Exemption other : active)
        {
            if (other.getTenant().equals(wanted.getTenant()) && other.getPrincipal().equals(wanted.getPrincipal()) &&
                other.getRoute().equals(wanted.getRoute()) && !other.getId().equals(wanted.getId()))
            {
                errors.add("exemption: '" + other.getId() + "' already covers exactly these requests");
            }
        }
        return errors;
    }

    /** An exemption's selector, compiled as a policy's is (so it matches requests exactly alike). */
    static CompiledPolicy selectorOf(final Exemption exemption)
    {
        return PolicySetIndex.compileOne(Policy.newBuilder()
            .setId(exemption.getId().isEmpty() ? "x" : exemption.getId())
            .setSelector(Selector.newBuilder()
                .setTenant(exemption.getTenant()).setPrincipal(exemption.getPrincipal()).setRoute(exemption.getRoute()))
            .setRate(1)
            .setScope(Scope.GLOBAL)
            .setOwner(exemption.getOwner().isBlank() ? "-" : exemption.getOwner())
            .build(), "exemption");
    }


    static String describe(final Exemption e)
    {
        final StringBuilder out = new StringBuilder();
        if (!e.getTenant().isEmpty())
        {
            out.append("tenant=").append(e.getTenant()).append(' ');
        }
        if (!e.getPrincipal().isEmpty())
        {
            out.append("principal=").append(e.getPrincipal()).append(' ');
        }
        if (!e.getRoute().isEmpty())
        {
            out.append("route=").append(e.getRoute()).append(' ');
        }
        return out.toString().trim();
    }
}
