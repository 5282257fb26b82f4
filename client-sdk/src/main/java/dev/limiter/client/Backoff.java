package dev.limiter.client;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongUnaryOperator;

/**
 * The SDK's one retry and backoff policy: how long to wait before trying again, for each reason a
 * node did not decide something, and how often a release is tried.
 *
 * <p>Every wait is exponential with jitter: try {@code n} (from 0) waits a random time between half
 * of and all of {@code min(max, first << n)}, so that callers refused together do not return
 * together. Calls and releases are never sent again past their deadline: the caller of
 * {@link #fitsBefore} leaves such a call to the deadline timer. A NOT_LEADER answer that names the
 * leader is followed at once, with no wait. Immutable and thread-safe.
 */
final class Backoff
{
    /** Why something is tried again; each reason has its own first and longest wait. */
    enum Reason
    {
        /** A node refused because no member leads (an election, or a leader handing over). */
        NO_LEADER(TimeUnit.MILLISECONDS.toNanos(10), TimeUnit.MILLISECONDS.toNanos(25)),
        /** A node decided nothing in a frame because its replication log is behind (OVERLOADED). */
        OVERLOADED(TimeUnit.MILLISECONDS.toNanos(1), TimeUnit.MILLISECONDS.toNanos(32)),
        /** A connection failed to open or was lost. */
        RECONNECT(TimeUnit.MILLISECONDS.toNanos(50), TimeUnit.SECONDS.toNanos(2));

        final long firstNanos;
        final long maxNanos;

        Reason(final long firstNanos, final long maxNanos)
        {
            this.firstNanos = firstNanos;
            this.maxNanos = maxNanos;
        }
    }

    /** Most tries of one release, following NOT_LEADER answers and waiting out elections, before it fails. */
    static final int RELEASE_ATTEMPTS = 8;
    /** Doublings at most: past this the wait stays at its reason's maximum. */
    private static final int MAX_DOUBLINGS = 16;

    static final Backoff DEFAULT = new Backoff(bound -> ThreadLocalRandom.current().nextLong(bound));

    /** Given a bound {@code b > 0}, a uniform random number in {@code [0, b)}. */
    private final LongUnaryOperator random;

    Backoff(final LongUnaryOperator random)
    {
        this.random = random;
    }

    /**
     * The wait before try {@code attempt + 1} for {@code reason}, ns.
     *
     * @param attempt tries already made for the same reason, 0 for the first retry
     */
    long delayNanos(final Reason reason, final int attempt)
    {
        final int doublings = Math.min(Math.max(attempt, 0), MAX_DOUBLINGS);
        final long ceiling = Math.min(reason.maxNanos, reason.firstNanos << doublings);
        final long half = ceiling / 2;
        return half + random.applyAsLong(ceiling - half + 1);
    }

    /** Whether a try {@code delayNanos} from {@code nowNanos} would still come before {@code deadlineNanos}. */
    static boolean fitsBefore(final long deadlineNanos, final long nowNanos, final long delayNanos)
    {
        return deadlineNanos - nowNanos - delayNanos > 0;
    }
}
