package dev.limiter.client;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.limiter.protocol.policy.PolicySet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The policy set this SDK holds: fetched from the cluster when a connection opens, pushed by the
 * node on every change, re-confirmed periodically. The newest version wins (several connections
 * may deliver the same set). When no node has confirmed it for longer than the TTL, the set is
 * stale: {@link #current()} is then empty, while {@link #version()} still tells what was last held.
 */
public final class PolicyCache
{
    private static final Logger LOG = LoggerFactory.getLogger(PolicyCache.class);

    /** One set as received: its version, the policies, and when a node last confirmed it. */
    public record Snapshot(long version, PolicySet policies, long confirmedAtNanos)
    {
    }

    private final long ttlNanos;
    private final LongSupplier nanoClock;
    private final CopyOnWriteArrayList<Consumer<Snapshot>> listeners = new CopyOnWriteArrayList<>();
    private volatile Snapshot snapshot;

    PolicyCache(final Duration ttl, final LongSupplier nanoClock)
    {
        this.ttlNanos = ttl.toNanos();
        this.nanoClock = nanoClock;
    }

    /** The set, if a node confirmed it within the TTL. */
    public Optional<Snapshot> current()
    {
        final Snapshot held = snapshot;
        return held != null && nanoClock.getAsLong() - held.confirmedAtNanos() <= ttlNanos ? Optional.of(held) : Optional.empty();
    }

    /** Version of the newest set held (0: none yet), whether or not it is still within the TTL. */
    public long version()
    {
        final Snapshot held = snapshot;
        return held == null ? 0 : held.version();
    }

    /** Called with every newer set (on an SDK I/O thread: return quickly). */
    public void onChange(final Consumer<Snapshot> listener)
    {
        listeners.add(listener);
    }

    /**
     * A set read back from a {@link PolicyStore} at start: held as confirmed when the store says it
     * was (so the TTL keeps counting across the restart), unless a newer set already arrived.
     */
    void restored(final PolicyStore.Stored stored, final long ageNanos)
    {
        if (snapshot != null || stored.version() <= 0)
        {
            return;
        }
        try
        {
            snapshot = new Snapshot(stored.version(), PolicySet.parseFrom(stored.policySet()), nanoClock.getAsLong() - Math.max(0, ageNanos));
        }
        catch (final InvalidProtocolBufferException e)
        {
            LOG.warn("ignoring the stored policy set (version {}): {}", stored.version(), e.getMessage());
        }
    }

    /** A POLICIES_RESULT body: {@code u64 version | PolicySet}. */
    void received(final long version, final byte[] set)
    {
        final Snapshot held = snapshot;
        final long now = nanoClock.getAsLong();
        if (held != null && version < held.version())
        {
            return; // an older set from a node that has not applied the newest change yet
        }
        if (held != null && version == held.version())
        {
            snapshot = new Snapshot(version, held.policies(), now); // re-confirmed
            return;
        }
        final PolicySet policies;
        try
        {
            policies = PolicySet.parseFrom(set);
        }
        catch (final InvalidProtocolBufferException e)
        {
            LOG.warn("ignoring a malformed policy set (version {}): {}", version, e.getMessage());
            return;
        }
        final Snapshot fresh = new Snapshot(version, policies, now);
        snapshot = fresh;
        for (final Consumer<Snapshot> listener : listeners)
        {
            try
            {
                listener.accept(fresh);
            }
            catch (final RuntimeException e)
            {
                LOG.warn("a policy listener failed: {}", e.toString());
            }
        }
    }
}
