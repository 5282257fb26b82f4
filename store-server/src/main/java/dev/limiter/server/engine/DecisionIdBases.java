package dev.limiter.server.engine;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The id bases of answered frames ({@link dev.limiter.protocol.DecisionIds}): a per-process random
 * epoch plus a counter, so that bases are unique within a process and two processes' ranges almost
 * surely never meet. Each frame router's pool takes the counter in blocks, so a frame's base costs
 * an increment and no shared write; never 0. One per pool, owned by its event loop.
 */
final class DecisionIdBases
{
    private static final int BLOCK = 1024;
    /** The next unclaimed base of this process, from a random epoch. */
    private static final AtomicLong EPOCH = new AtomicLong(new SecureRandom().nextLong());

    private long next;
    private long end;

    /** A new base, never 0. */
    long next()
    {
        if (next == end)
        {
            next = EPOCH.getAndAdd(BLOCK);
            end = next + BLOCK;
        }
        final long base = next++;
        return base != 0 ? base : next();
    }
}
