package dev.limiter.server.control;

import dev.limiter.protocol.policy.AuditRecord;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * What SDKs report of their own (degraded windows), kept apart from the audit trail of policy
 * changes so that no flood of reports can push a policy record out: at most
 * {@value #MAX_PER_CLIENT} records per SDK instance (its oldest goes first) and
 * {@value #MAX_RECORDS} in all (the oldest of anybody goes first). Replicated state: changed only
 * by applied log entries, in log order, so every replica holds the same trail.
 */
final class SdkReportTrail
{
    /** Records kept in all. */
    static final int MAX_RECORDS = 10_000;
    /** Records kept per SDK instance ({@code policy_id} "sdk:<instance>"). */
    static final int MAX_PER_CLIENT = 100;

    private final ArrayDeque<AuditRecord> records = new ArrayDeque<>();
    private final Map<String, Integer> perClient = new HashMap<>();

    /** Whether this client already reported exactly this window (an SDK re-sends until a node takes it). */
    boolean contains(final String client, final String detail)
    {
        if (!perClient.containsKey(client))
        {
            return false;
        }
        for (final Iterator<AuditRecord> newestFirst = records.descendingIterator(); newestFirst.hasNext(); )
        {
            final AuditRecord record = newestFirst.next();
            if (record.getPolicyId().equals(client) && record.getDetail().equals(detail))
            {
                return true;
            }
        }
        return false;
    }

    void add(final AuditRecord record)
    {
        final String client = record.getPolicyId();
        if (perClient.getOrDefault(client, 0) >= MAX_PER_CLIENT)
        {
            for (final Iterator<AuditRecord> oldestFirst = records.iterator(); oldestFirst.hasNext(); )
            {
                if (oldestFirst.next().getPolicyId().equals(client))
                {
                    oldestFirst.remove();
                    perClient.merge(client, -1, Integer::sum);
                    break;
                }
            }
        }
        records.addLast(record);
        perClient.merge(client, 1, Integer::sum);
        if (records.size() > MAX_RECORDS)
        {
            final AuditRecord oldest = records.removeFirst();
            if (perClient.merge(oldest.getPolicyId(), -1, Integer::sum) == 0)
            {
                perClient.remove(oldest.getPolicyId());
            }
        }
    }

    /** Matching records, oldest first. */
    void collect(final Predicate<AuditRecord> filter, final List<AuditRecord> into)
    {
        for (final AuditRecord record : records)
        {
            if (filter.test(record))
            {
                into.add(record);
            }
        }
    }

    /** The newest record's sequence, or 0. */
    long lastSequence()
    {
        return records.isEmpty() ? 0 : records.getLast().getSequence();
    }

    int size()
    {
        return records.size();
    }

    Iterable<AuditRecord> records()
    {
        return records;
    }

    void replaceWith(final List<AuditRecord> restored)
    {
        records.clear();
        perClient.clear();
        restored.forEach(this::add);
    }
}
