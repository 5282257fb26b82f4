package dev.limiter.server.control;

import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyStateSnapshot;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Predicate;

/**
 * The replicated audit trail: policy, exemption and membership records (at most
 * {@value #MAX_RECORDS}, the oldest dropped first) and, kept apart so that no flood of them can
 * push a policy record out, what SDKs report of their own ({@link SdkReportTrail}). Both share one
 * sequence, so merged by it they read as one log. Each record takes its time and actor from the
 * command that made it: every replica holds the same trail. Not thread-safe; {@link PolicyState}
 * guards it.
 */
final class AuditTrail
{
    /** Policy records kept; older ones are dropped. */
    static final int MAX_RECORDS = 100_000;

    private final ArrayDeque<AuditRecord> records = new ArrayDeque<>();
    private final SdkReportTrail sdkReports = new SdkReportTrail();
    private long nextSequence = 1;

    /** Appends a policy record made by {@code command}. */
    void record(final PolicyCommand command, final String action, final String id, final long version, final String owner,
        final String reason, final String detail)
    {
        records.addLast(make(command, action, id, version, owner, reason, detail));
        while (records.size() > MAX_RECORDS)
        {
            records.removeFirst();
        }
    }

    /**
     * Appends an SDK's report to the SDK trail unless the same client already reported exactly this
     * (an SDK re-sends until a node takes it).
     */
    void recordSdkReport(final PolicyCommand command, final String client, final String reason, final String detail)
    {
        if (!sdkReports.contains(client, detail))
        {
            sdkReports.add(make(command, "SDK_DEGRADED_WINDOW", client, 0, "", reason, detail));
        }
    }

    private AuditRecord make(final PolicyCommand command, final String action, final String id, final long version,
        final String owner, final String reason, final String detail)
    {
        return AuditRecord.newBuilder()
            .setSequence(nextSequence++)
            .setAt(command.getAt())
            .setActor(command.getActor())
            .setAction(action)
            .setPolicyId(id)
            .setVersion(version)
            .setOwner(owner)
            .setReason(reason)
            .setDetail(detail)
            .build();
    }

    /** Records of both trails matching {@code filter}, by sequence, at most {@code limit} (the newest ones). */
    List<AuditRecord> matching(final Predicate<AuditRecord> filter, final int limit)
    {
        final List<AuditRecord> matched = new ArrayList<>();
        for (final AuditRecord record : records)
        {
            if (filter.test(record))
            {
                matched.add(record);
            }
        }
        sdkReports.collect(filter, matched);
        matched.sort(Comparator.comparingLong(AuditRecord::getSequence));
        return List.copyOf(matched.subList(Math.max(0, matched.size() - limit), matched.size()));
    }

    void writeTo(final PolicyStateSnapshot.Builder snapshot)
    {
        snapshot.addAllAudit(records);
        snapshot.addAllSdkReports(sdkReports.records());
    }

    void restoreFrom(final PolicyStateSnapshot snapshot)
    {
        records.clear();
        records.addAll(snapshot.getAuditList());
        sdkReports.replaceWith(snapshot.getSdkReportsList());
        nextSequence = Math.max(records.isEmpty() ? 0 : records.getLast().getSequence(), sdkReports.lastSequence()) + 1;
    }
}
