package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.RemoveExemption;
import dev.limiter.server.control.PolicyState.Outcome;
import dev.limiter.server.control.PolicyState.Status;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The exemptions of the replicated state: created, ended early, charged with bypasses and expired
 * only by applied commands (by the command's time), each change written to the {@link AuditTrail}.
 * The request path reads {@link #active()}, recompiled after every change; bypasses are counted on
 * each node (not replicated) until the leader's tick carries them into the log. It owns the EXEMPT,
 * UNEXEMPT and TICK commands and writes their replies. Changes are guarded by {@link PolicyState}.
 */
final class ExemptionBook
{
    private final AuditTrail audit;
    private final LongSupplier setVersion;

    /** Active exemptions by id, in creation order. */
    private final Map<String, Exemption> byId = new LinkedHashMap<>();
    private volatile ActiveExemptions active = ActiveExemptions.NONE;
    /** Bypasses counted on this node by exemption id. */
    private final Map<String, AtomicLong> bypassCounters = new ConcurrentHashMap<>();

    /**
     * @param audit      where each change is recorded
     * @param setVersion the policy set's version, which every reply names
     */
    ExemptionBook(final AuditTrail audit, final LongSupplier setVersion)
    {
        this.audit = audit;
        this.setVersion = setVersion;
    }

    /** EXEMPT: creates the exemption, or says why not. */
    Outcome exempt(final PolicyCommand command)
    {
        final List<String> errors = create(command, command.getExempt());
        return errors.isEmpty() ? ok() :
            Outcome.invalid("exemption " + command.getExempt().getId() + " is invalid; nothing changed", errors);
    }

    /** UNEXEMPT: ends an active exemption early, with a reason. */
    Outcome unexempt(final PolicyCommand command)
    {
        final RemoveExemption remove = command.getUnexempt();
        if (!byId.containsKey(remove.getId()))
        {
            return Outcome.notFound("no active exemption " + remove.getId() + " (see ./limiter exempt list)");
        }
        if (remove.getReason().isBlank())
        {
            return Outcome.invalid("cannot remove exemption " + remove.getId() + "; nothing changed",
                List.of("reason: required (why end it early)"));
        }
        remove(command, remove);
        return ok();
    }

    /** TICK: the cluster's clock moved; records bypasses and expires what is due, both by the entry's time. */
    Outcome tick(final PolicyCommand command)
    {
        return charge(command) ? ok() :
            new Outcome(Status.IGNORED, ChangeResult.newBuilder().setSetVersion(setVersion.getAsLong()).build(), null);
    }

    private Outcome ok()
    {
        return Outcome.ok(ChangeResult.newBuilder().setSetVersion(setVersion.getAsLong()).build());
    }

    /** Creates {@code wanted} as of {@code command}, or says why not (empty: created). */
    private List<String> create(final PolicyCommand command, final Exemption wanted)
    {
        final List<String> errors = ExemptionRules.problems(wanted, PolicyVersions.millis(command.getAt()), byId.values());
        if (!errors.isEmpty())
        {
            return errors;
        }
        final Exemption made = wanted.toBuilder().setCreatedAt(command.getAt()).setActor(command.getActor()).setBypassed(0).build();
        byId.put(made.getId(), made);
        compile();
        audit.record(command, "EXEMPTION_CREATED", "exemption:" + made.getId(), 0, made.getOwner(), made.getReason(),
            ExemptionRules.describe(made) + " until " + Timestamps.toString(made.getExpiresAt()));
        return List.of();
    }

    /** Ends one exemption early (the caller has checked it exists and has a reason). */
    private void remove(final PolicyCommand command, final RemoveExemption remove)
    {
        final Exemption existing = byId.remove(remove.getId());
        compile();
        audit.record(command, "EXEMPTION_REMOVED", "exemption:" + existing.getId(), 0, existing.getOwner(), remove.getReason(),
            ExemptionRules.describe(existing) + "; " + existing.getBypassed() + " decisions bypassed in all");
    }

    /**
     * The cluster's clock moved to the tick's time: charge the bypasses it reports and expire what
     * is due. Returns whether anything changed.
     */
    private boolean charge(final PolicyCommand command)
    {
        final long at = PolicyVersions.millis(command.getAt());
        boolean changed = false;
        for (final Map.Entry<String, Long> used : new TreeMap<>(command.getTick().getBypassedMap()).entrySet())
        {
            final Exemption exemption = byId.get(used.getKey());
            if (exemption != null && used.getValue() > 0)
            {
                byId.put(exemption.getId(), exemption.toBuilder().setBypassed(exemption.getBypassed() + used.getValue()).build());
                audit.record(command, "EXEMPTION_USED", "exemption:" + exemption.getId(), 0, exemption.getOwner(), exemption.getReason(),
                    used.getValue() + " decisions bypassed since the previous report");
                changed = true;
            }
        }
        for (final Exemption exemption : List.copyOf(byId.values()))
        {
            if (PolicyVersions.millis(exemption.getExpiresAt()) <= at)
            {
                byId.remove(exemption.getId());
                audit.record(command, "EXEMPTION_EXPIRED", "exemption:" + exemption.getId(), 0, exemption.getOwner(), exemption.getReason(),
                    ExemptionRules.describe(exemption) + "; " + exemption.getBypassed() + " decisions bypassed in all");
                changed = true;
            }
        }
        if (changed)
        {
            compile();
        }
        return changed;
    }

    /** Rebuilds what the request path reads from the exemptions held now. */
    void compile()
    {
        final int n = byId.size();
        final String[] ids = new String[n];
        final CompiledPolicy[] selectors = new CompiledPolicy[n];
        final long[] expires = new long[n];
        final AtomicLong[] counters = new AtomicLong[n];
        int i = 0;
        for (final Exemption exemption : byId.values())
        {
            ids[i] = exemption.getId();
            selectors[i] = ExemptionRules.selectorOf(exemption);
            expires[i] = PolicyVersions.millis(exemption.getExpiresAt());
            counters[i] = bypassCounters.computeIfAbsent(exemption.getId(), id -> new AtomicLong());
            i++;
        }
        bypassCounters.keySet().retainAll(byId.keySet());
        active = n == 0 ? ActiveExemptions.NONE : new ActiveExemptions(ids, selectors, expires, counters);
    }

    /** The exemptions in force, compiled for the request path (any thread). */
    ActiveExemptions active()
    {
        return active;
    }

    /** Active exemptions, in creation order. */
    List<Exemption> list()
    {
        return List.copyOf(byId.values());
    }

    /** Decisions bypassed on this node since {@code reported}, by exemption id (any thread). */
    Map<String, Long> bypassesSince(final Map<String, Long> reported)
    {
        final Map<String, Long> delta = new HashMap<>();
        bypassCounters.forEach((id, counter) ->
        {
            final long n = counter.get() - reported.getOrDefault(id, 0L);
            if (n > 0)
            {
                delta.put(id, n);
            }
        });
        return delta;
    }

    /** Bypasses counted on this node for one exemption, 0 when unknown (any thread). */
    long bypassesHere(final String id)
    {
        final AtomicLong counter = bypassCounters.get(id);
        return counter == null ? 0 : counter.get();
    }

    void writeTo(final PolicyStateSnapshot.Builder snapshot)
    {
        snapshot.addAllExemptions(byId.values());
    }

    /** Takes the snapshot's exemptions; {@link #compile()} makes them active. */
    void restoreFrom(final PolicyStateSnapshot snapshot)
    {
        byId.clear();
        snapshot.getExemptionsList().forEach(e -> byId.put(e.getId(), e));
    }
}
