package dev.limiter.server.region;

import dev.limiter.protocol.policy.RegionShares;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Groups whose logs are a test's: a proposal is recorded, and applied at once when told to (else the
 * test applies copies itself, to look between), failed when told to, or left in flight.
 */
final class FakeRegionGroups implements RegionGroups
{
    final RegionShares[] copies;
    final boolean[] decides;
    final List<String> proposed = new CopyOnWriteArrayList<>();
    final List<Runnable> listeners = new ArrayList<>();
    volatile boolean failNext;
    /** Answered to the next proposal instead of applying it (one in flight), when set. */
    volatile CompletableFuture<Void> holdNext;
    /** Whether proposals apply at once. */
    volatile boolean applyProposals;

    FakeRegionGroups(final int count)
    {
        copies = new RegionShares[count];
        decides = new boolean[count];
        for (int g = 0; g < count; g++)
        {
            copies[g] = RegionShares.getDefaultInstance();
        }
    }

    synchronized void apply(final int group, final RegionShares copy)
    {
        if (copy.getGeneration() > copies[group].getGeneration())
        {
            copies[group] = copy;
            listeners.forEach(Runnable::run);
        }
    }

    @Override
    public int count()
    {
        return copies.length;
    }

    @Override
    public int groupOf(final int shard)
    {
        return shard % copies.length;
    }

    @Override
    public synchronized RegionShares copy(final int group)
    {
        return copies[group];
    }

    @Override
    public boolean decides(final int group)
    {
        return decides[group];
    }

    @Override
    public CompletableFuture<?> propose(final int group, final RegionShares shares)
    {
        proposed.add(group + "@" + shares.getGeneration());
        final CompletableFuture<Void> held = holdNext;
        if (held != null)
        {
            holdNext = null;
            return held;
        }
        if (failNext)
        {
            failNext = false;
            return CompletableFuture.failedFuture(new IllegalStateException("not committed"));
        }
        if (applyProposals)
        {
            apply(group, shares);
        }
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public void onCopy(final Runnable listener)
    {
        listeners.add(listener);
    }
}
