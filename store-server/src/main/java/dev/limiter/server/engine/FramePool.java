package dev.limiter.server.engine;

import dev.limiter.server.metrics.ServerMetrics;

import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * One event loop's pool of {@link FrameWork}, with what that loop's frames share: where they sample
 * their rejections, the loop's block of decision-id bases, and the stamps the answers use to list each
 * policy once. Only its event loop's thread touches it.
 */
final class FramePool
{
    private static final int MAX_FREE = 4096;

    private final ArrayDeque<FrameWork> free = new ArrayDeque<>();
    private final ServerMetrics metrics;
    /** Where this loop's frames sample their rejections. */
    final RejectedDecisions rejections;
    final DecisionIdBases idBases = new DecisionIdBases();
    private int[] seen = new int[16];
    private int stamp;

    FramePool(final ServerMetrics metrics, final RejectedDecisions rejections)
    {
        this.metrics = metrics;
        this.rejections = rejections;
    }

    FrameWork acquire()
    {
        final FrameWork work = free.pollFirst();
        return work != null ? work : new FrameWork(this, metrics);
    }

    void release(final FrameWork work)
    {
        if (free.size() < MAX_FREE)
        {
            free.addFirst(work);
        }
    }

    /**
     * A stamp no entry of {@link #seen()} holds yet, with room for {@code policyCount} ordinals: an
     * answer marks each policy it lists with it.
     */
    int nextStamp(final int policyCount)
    {
        if (seen.length < policyCount)
        {
            seen = new int[policyCount];
        }
        if (++stamp == 0)
        {
            Arrays.fill(seen, 0);
            stamp = 1;
        }
        return stamp;
    }

    /** The stamp each policy ordinal was last listed with (valid after {@link #nextStamp}). */
    int[] seen()
    {
        return seen;
    }
}
