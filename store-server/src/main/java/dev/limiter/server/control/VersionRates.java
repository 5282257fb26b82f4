package dev.limiter.server.control;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.PolicySetIndex;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The limits of every policy version a bucket may have been decided under, as the control state
 * last published them: what a replica replays a decision with, and what a sweep asks of a stored
 * bucket. Published whole by the {@link PolicyCatalogue} after every change (immutable tables
 * behind volatile fields, read with no lock). Decisions kept in other Raft groups may reach a
 * replica before the version they were made under, so their apply threads wait here
 * ({@link #awaitRate}) until it is published.
 */
final class VersionRates
{
    private static final Logger LOG = LoggerFactory.getLogger(VersionRates.class);

    private final int shards;
    private volatile Limit[] latest = new Limit[0];
    /**
     * Limits by ordinal, then version - 1, then limit index (the policy's own, then its extra
     * limits), then shard: every version a bucket may have been decided under. One limit when the
     * version's buckets have the same on every shard, one share per shard when it is split across
     * shards, null when it cannot be split this many ways (refused when changed, so no bucket has it).
     */
    private volatile Limit[][][][] byVersion = new Limit[0][][][];
    /** Set by {@link #stopWaiting()}; guarded by this. */
    private boolean stopping;

    /** @param shards the node's shard count: a split version keeps one share per shard */
    VersionRates(final int shards)
    {
        this.shards = shards;
    }

    /**
     * Publishes new tables and wakes every waiting decision.
     *
     * @param latestByOrdinal  the rate a sweep asks of a bucket under each ordinal
     * @param ratesByOrdinal   for each ordinal, every limit of each of its versions (version - 1 first)
     * @param splitByOrdinal   for each ordinal, whether each version is split across shards
     */
    void publish(final Limit[] latestByOrdinal, final List<List<Limit[]>> ratesByOrdinal,
        final List<List<Boolean>> splitByOrdinal)
    {
        final Limit[][][][] table = new Limit[ratesByOrdinal.size()][][][];
        for (int ordinal = 0; ordinal < table.length; ordinal++)
        {
            final List<Limit[]> rates = ratesByOrdinal.get(ordinal);
            table[ordinal] = new Limit[rates.size()][][];
            for (int v = 0; v < rates.size(); v++)
            {
                final Limit[] limits = rates.get(v);
                table[ordinal][v] = new Limit[limits.length][];
                for (int k = 0; k < limits.length; k++)
                {
                    table[ordinal][v][k] = byShard(limits[k], splitByOrdinal.get(ordinal).get(v));
                }
            }
        }
        synchronized (this)
        {
            latest = latestByOrdinal;
            byVersion = table;
            notifyAll();
        }
    }

    /** Back to no versions at all (a state that was never bootstrapped). */
    void clear()
    {
        synchronized (this)
        {
            latest = new Limit[0];
            byVersion = new Limit[0][][][];
            notifyAll();
        }
    }

    private Limit[] byShard(final Limit rate, final boolean split)
    {
        if (!split || shards <= 1)
        {
            return new Limit[] {rate};
        }
        try
        {
            return CompiledPolicy.shares(rate, shards);
        }
        catch (final IllegalArgumentException e)
        {
            return null; // cannot be split this many ways: refused when changed, so no bucket was decided under it here
        }
    }

    /** Rate of the newest version under this ordinal; the built-in default for an ordinal never assigned. */
    Limit latest(final int ordinal)
    {
        final Limit[] rates = latest;
        return ordinal < rates.length ? rates[ordinal] : PolicySetIndex.limitOf(PolicySetIndex.BUILT_IN_DEFAULT);
    }

    /** Limit {@code limitIndex} of one version of a policy on one shard, or null when not published (yet). */
    Limit rateIfKnown(final int ordinal, final long version, final int limitIndex, final int shard)
    {
        // Read for every replayed decision: a volatile read of an immutable table, no lock.
        final Limit[][][][] rates = byVersion;
        if (ordinal >= rates.length || version < 1 || version > rates[ordinal].length)
        {
            return null;
        }
        final Limit[][] byLimit = rates[ordinal][(int)(version - 1)];
        final Limit[] byShard = byLimit == null || limitIndex >= byLimit.length ? null : byLimit[limitIndex];
        if (byShard == null)
        {
            return null;
        }
        return byShard.length == 1 ? byShard[0] : shard < byShard.length ? byShard[shard] : null;
    }

    /**
     * Waits until the version is published. The control group never waits for anything, so this
     * cannot deadlock.
     *
     * @throws IllegalStateException when interrupted, or once {@link #stopWaiting()} was called
     */
    Limit await(final int ordinal, final long version, final int limitIndex, final int shard)
    {
        final Limit known = rateIfKnown(ordinal, version, limitIndex, shard);
        if (known != null)
        {
            return known;
        }
        final long start = System.nanoTime();
        long warned = start;
        synchronized (this)
        {
            Limit rate;
            while ((rate = rateIfKnown(ordinal, version, limitIndex, shard)) == null)
            {
                if (stopping)
                {
                    throw new IllegalStateException("the node is stopping: stopped waiting for policy ordinal " +
                        ordinal + " version " + version +
                        " (the decision is applied again from the log after a restart)");
                }
                try
                {
                    wait(1000);
                }
                catch (final InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("stopped waiting for policy ordinal " + ordinal + " version " +
                        version, e);
                }
                if (System.nanoTime() - warned > TimeUnit.SECONDS.toNanos(10))
                {
                    warned = System.nanoTime();
                    LOG.warn("a replicated decision waits {} s for policy ordinal {} version {} " +
                        "(the control group is behind here)", TimeUnit.NANOSECONDS.toSeconds(warned - start), ordinal,
                        version);
                }
            }
            return rate;
        }
    }

    /** Every waiting decision stops waiting, now and later (the node is stopping). */
    void stopWaiting()
    {
        synchronized (this)
        {
            stopping = true;
            notifyAll();
        }
    }
}
