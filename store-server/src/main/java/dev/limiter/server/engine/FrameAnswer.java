package dev.limiter.server.engine;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import io.netty.buffer.ByteBuf;

/**
 * Completes a decided frame's answer once every shard has written its records: the policy
 * dictionary, the shadow leases the records adopt, then the lease, refusal and decision-id
 * sections ({@link ResultCodec}, {@link DecisionIds}: the first two are written, even empty, when a
 * later one follows), and the sampling of its rejections ({@link RejectedDecisions}). Runs on the
 * connection's event loop.
 */
final class FrameAnswer
{
    private FrameAnswer()
    {
    }

    /** Writes what follows {@code work}'s records and closes the frame; {@code ids}: the peer takes decision ids. */
    static void finish(final FrameWork work, final FramePool pool, final boolean ids)
    {
        final ByteBuf response = work.response;
        appendPolicyDictionary(work, pool);
        if (work.anyLeased)
        {
            adoptShadowLeases(work);
        }
        if (work.anyLeased)
        {
            appendLeases(work);
        }
        else if (work.anyRefused || ids)
        {
            ResultCodec.beginLeases(response, 0); // the refusal section follows the lease section
        }
        if (work.anyRefused)
        {
            appendRefusals(work);
        }
        else if (ids)
        {
            ResultCodec.beginRefusals(response, 0); // and the decision ids follow the refusal section
        }
        if (ids)
        {
            DecisionIds.appendSection(response, work.idBase);
        }
        if (!work.release)
        {
            sampleRejections(work, pool.rejections);
        }
        Frame.finish(response, work.frameStart);
    }

    private static void appendPolicyDictionary(final FrameWork work, final FramePool pool)
    {
        final ByteBuf response = work.response;
        final int stamp = pool.nextStamp(work.policies.ordinalLimit());
        final int[] seen = pool.seen();
        final int countIndex = response.writerIndex();
        response.writeShort(0);
        int distinct = 0;
        for (int i = 0; i < work.count; i++)
        {
            final CompiledPolicy p = work.entries.policy[i];
            if (seen[p.ordinal()] != stamp)
            {
                seen[p.ordinal()] = stamp;
                ResultCodec.appendPolicy(response, p.ordinal(), p.idUtf8());
                distinct++;
            }
        }
        response.setShort(countIndex, distinct);
    }

    /**
     * A shadow concurrency limit took a lease for an entry whose own answer holds none (the
     * enforced policy is a rate): the record holds the shadow's lease, so that the caller gives it
     * back and the shadow counts what runs, not what ran within its TTL. Here, once every shard is
     * done, because the entry's record may belong to another shard.
     */
    private static void adoptShadowLeases(final FrameWork work)
    {
        final ShadowColumns shadows = work.shadows;
        for (int j = 0; j < work.shadowCount; j++)
        {
            final int entry = shadows.entry[j];
            if (shadows.leased[j] && !work.leased[entry])
            {
                ResultCodec.markLease(work.response, ResultCodec.recordOffset(work.frameStart, entry));
                work.leased[entry] = true;
                work.leaseId[entry] = shadows.leaseId[j];
                work.leaseCheck[entry] = shadows.leaseCheck[j];
            }
        }
    }

    /** The lease section: which records hold a lease, and its id (their flag is set by the shard). */
    private static void appendLeases(final FrameWork work)
    {
        int leases = 0;
        for (int i = 0; i < work.count; i++)
        {
            leases += work.leased[i] ? 1 : 0;
        }
        ResultCodec.beginLeases(work.response, leases);
        for (int i = 0; i < work.count; i++)
        {
            if (work.leased[i])
            {
                ResultCodec.appendLease(work.response, i, work.leaseId[i], work.leaseCheck[i]);
            }
        }
    }

    /**
     * The refusal section: which records were refused, and why (their INVALID_REQUEST records are written by the
     * router).
     */
    private static void appendRefusals(final FrameWork work)
    {
        int refused = 0;
        for (int i = 0; i < work.count; i++)
        {
            refused += work.entries.shard[i] == FrameWork.REFUSED ? 1 : 0;
        }
        ResultCodec.beginRefusals(work.response, refused);
        for (int i = 0; i < work.count; i++)
        {
            if (work.entries.shard[i] == FrameWork.REFUSED)
            {
                ResultCodec.appendRefusal(work.response, i, work.takeRefusal(i));
            }
        }
    }

    /**
     * Hands each rejected record (not an INVALID_REQUEST: nothing was decided) to the node's sampled
     * log. An allowed record costs one byte read here.
     */
    private static void sampleRejections(final FrameWork work, final RejectedDecisions rejections)
    {
        final ByteBuf response = work.response;
        long now = 0;
        for (int i = 0; i < work.count; i++)
        {
            final int record = ResultCodec.recordOffset(work.frameStart, i);
            if (ResultCodec.allowed(response, record))
            {
                continue;
            }
            final int reason = ResultCodec.reasonCode(response, record);
            if (reason == ReasonCode.INVALID_REQUEST.code())
            {
                continue;
            }
            now = now == 0 ? rejections.now() : now;
            final int ref = ResultCodec.policyRef(response, record);
            final CompiledPolicy decided = ref < work.policies.ordinalLimit() ? work.policies.policy(ref) : null;
            final CompiledPolicy policy = decided != null ? decided : work.entries.policy[i];
            rejections.record(work.idBase, i, now, policy.id(), ResultCodec.policyVersion(response, record), reason,
                work.request, work.tenantAt[i], work.tenantLength[i],
                policy.route() == null ? null : policy.route().canonical(), work.pathAt[i], work.pathLength[i]);
        }
    }
}
