package dev.limiter.client;

import java.util.Optional;

/**
 * Where an SDK keeps the last policy set it held across restarts of the host service, so that a
 * service starting while the cluster is unreachable still knows the policies (within the TTL).
 * Opt-in: {@link LimiterClient.Builder#policyStore}. Implementations must be safe to call from an
 * SDK I/O thread and must not throw for an absent or unreadable store (return empty instead).
 */
public interface PolicyStore extends AutoCloseable
{
    /** A stored set: its version, when it was last confirmed (wall-clock milliseconds), and the PolicySet bytes. */
    record Stored(long version, long confirmedAtMillis, byte[] policySet)
    {
    }

    /** The set stored last, if any. */
    Optional<Stored> load();

    /** Replaces the stored set. */
    void save(Stored stored);

    @Override
    default void close()
    {
    }
}
