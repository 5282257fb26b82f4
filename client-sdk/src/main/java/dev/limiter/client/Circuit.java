package dev.limiter.client;

import dev.limiter.protocol.ShardMap;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * Whether this client believes the cluster is reachable, and what it does meanwhile, kept for each
 * lane of calls: one lane per Raft group of the shard map (a call's lane is its shard's group), and
 * one for calls that are not routed (one group, no map, no tenant). So a group whose leader died
 * has its own calls decided locally while the other groups' calls still go to their leaders.
 *
 * <p>Per lane: closed, every call tries a node. After {@code threshold} consecutive calls of the
 * lane no node answered, open: the lane's calls are decided locally at once for the probe interval
 * (plus up to half of it at random, so many SDKs do not probe a recovering cluster in step); then
 * half-open: one call at a time tries a node while the others are still decided locally. The first
 * answer closes it and starts the lane's recovery ramp. Timeouts put down to this process (a
 * pause, a late I/O thread) are decided locally but never count against the store.
 *
 * <p>An outage, as this client reports it, lasts from the first lane that opens until every lane
 * is closed again: its window is reported then, the emergency budgets start afresh, and the
 * degraded time counts the whole of it.
 *
 * <p>It is the {@link PendingCall.Fallback} of every call, so it sees each call's outcome.
 */
final class Circuit implements PendingCall.Fallback
{
    /** Lanes: one per Raft group a shard map can name, plus lane 0 for calls that are not routed. */
    static final int LANES = ShardMap.MAX_SHARDS + 1;

    /** One lane's state; all of it changes only on failures, answers after failures and probes. */
    private static final class Lane
    {
        final AtomicInteger consecutiveFailures = new AtomicInteger();
        /** 0 while closed; else until when calls are decided locally without trying a node. */
        volatile long openUntilNanos;
        /** Past that time it is half-open: one call at a time (this flag) tries the cluster. */
        final AtomicBoolean probing = new AtomicBoolean();
        /** 0, or until when the lane's calls pass the recovery ramp first. */
        volatile long rampUntilNanos;
    }

    /** Null when local decisions are off: then nothing is decided here and failures pass through. */
    private final LocalFallback local;
    /** Null unless fast local rejection is on. */
    private final LocalRejections rejections;
    private final OutageReports reports;
    private final BooleanSupplier clientClosed;
    private final int threshold;
    private final long probeNanos;
    private final long rampNanos;

    private final Lane[] lanes = new Lane[LANES];
    /** Lanes open now (changed under this object's lock, with the outage's start and end). */
    private volatile int openLanes;
    /** When the current outage (as this client saw it) began; 0 when none. */
    private long degradedSinceNanos;
    private volatile long windowStartMillis;
    private volatile Map<String, Long> windowStartCounts = Map.of();
    private final LongAdder degradedNanos = new LongAdder();
    private final LongAdder pausedTimeouts = new LongAdder();

    Circuit(final LocalFallback local, final LocalRejections rejections, final OutageReports reports, final BooleanSupplier clientClosed,
        final int threshold, final long probeNanos, final long rampNanos)
    {
        this.local = local;
        this.rejections = rejections;
        this.reports = reports;
        this.clientClosed = clientClosed;
        this.threshold = threshold;
        this.probeNanos = probeNanos;
        this.rampNanos = rampNanos;
        for (int i = 0; i < LANES; i++)
        {
            lanes[i] = new Lane();
        }
    }

    /** During {@code lane}'s recovery ramp after an outage: the ramp's decision for this call, or null to go on. */
    Decision ramped(final int lane, final Descriptor descriptor, final int cost)
    {
        final Lane state = lanes[lane];
        final long until = state.rampUntilNanos;
        if (local == null || until == 0)
        {
            return null;
        }
        if (System.nanoTime() - until < 0)
        {
            return local.ramp(descriptor, cost);
        }
        state.rampUntilNanos = 0;
        return null;
    }

    /** 0 while {@code lane} is closed (or when nothing can be decided here); else until when it stays open. */
    long openUntilNanos(final int lane)
    {
        final long until = lanes[lane].openUntilNanos; // read first: while closed (nearly always) nothing else is looked at
        return until == 0 || local == null || clientClosed.getAsBoolean() ? 0 : until;
    }

    /**
     * With {@code lane} open until {@code openUntil}: whether this call is the half-open lane's one
     * probe (past that time, and no other probe of the lane out).
     */
    boolean takeProbe(final int lane, final long openUntil)
    {
        return System.nanoTime() - openUntil >= 0 && lanes[lane].probing.compareAndSet(false, true);
    }

    /** The local decision of a call the open circuit keeps from the cluster (null: no policy set held). */
    Decision decideOpen(final Descriptor descriptor, final int cost)
    {
        return local.decide(descriptor, cost, "circuit open after consecutive failures");
    }

    /** Whether {@code lane} is open (half-open included): its calls are decided locally, bar its probe. */
    boolean laneOpen(final int lane)
    {
        return lanes[lane].openUntilNanos != 0;
    }

    /** Lanes open now: 0 while every call tries a node. */
    int openLanes()
    {
        return openLanes;
    }

    /** Time with at least one lane open, the current outage included. */
    Duration degradedTime()
    {
        final long since;
        synchronized (this)
        {
            since = degradedSinceNanos;
        }
        return Duration.ofNanos(degradedNanos.sum() + (since == 0 ? 0 : System.nanoTime() - since));
    }

    long pausedTimeouts()
    {
        return pausedTimeouts.sum();
    }

    @Override
    public Decision onUnreachable(final PendingCall call, final LimiterException failure)
    {
        if (local == null || clientClosed.getAsBoolean())
        {
            return null;
        }
        if (call.lateHere)
        {
            // Out of time on this side (a pause of this process, a late I/O thread): the store may well
            // have answered in time. Decide this call here, but do not count it against the store.
            pausedTimeouts.increment();
            return local.decide(call.descriptor, call.cost, failure.getMessage());
        }
        final Lane lane = lanes[call.lane];
        final int failures = lane.consecutiveFailures.incrementAndGet();
        if (failures == 1 && openLanes == 0)
        {
            // A possible outage begins: its window counts from this call's local decision on.
            windowStartMillis = System.currentTimeMillis();
            windowStartCounts = local.counts();
        }
        if (failures >= threshold)
        {
            open(lane);
        }
        return local.decide(call.descriptor, call.cost, failure.getMessage());
    }

    /** Opens (or keeps open) {@code lane}, with jitter so many SDKs do not probe a recovering cluster in step. */
    private synchronized void open(final Lane lane)
    {
        final long jitter = (long)(probeNanos * 0.5 * ThreadLocalRandom.current().nextDouble());
        final long now = System.nanoTime();
        if (lane.openUntilNanos == 0)
        {
            if (openLanes == 0)
            {
                degradedSinceNanos = now;
            }
            openLanes++;
        }
        lane.openUntilNanos = now + probeNanos + jitter;
    }

    @Override
    public void onAnswer(final PendingCall call, final Decision decision)
    {
        if (rejections != null && !decision.allowed() && call.wireCost == call.cost) // a refused block says nothing of the cost
        {
            rejections.denied(call.descriptor, call.cost, decision, System.nanoTime());
        }
        final Lane lane = lanes[call.lane];
        if (lane.consecutiveFailures.get() != 0)
        {
            lane.consecutiveFailures.set(0);
            if (lane.openUntilNanos != 0)
            {
                close(lane);
            }
        }
    }

    /** A node answered a call of the open {@code lane}: it closes, and the outage ends with the last open lane. */
    private void close(final Lane lane)
    {
        final long windowStart;
        final Map<String, Long> countsAtStart;
        synchronized (this)
        {
            if (lane.openUntilNanos == 0)
            {
                return; // another answer closed it first
            }
            lane.openUntilNanos = 0;
            final long now = System.nanoTime();
            if (rampNanos > 0)
            {
                if (!anyLaneRamping(now))
                {
                    local.startRamp(); // ramp buckets start empty; those of a lane still ramping are left as they are
                }
                lane.rampUntilNanos = now + rampNanos;
            }
            if (--openLanes != 0)
            {
                return; // other groups are still out: the outage goes on
            }
            local.recovered();
            degradedNanos.add(now - degradedSinceNanos);
            degradedSinceNanos = 0;
            windowStart = windowStartMillis;
            countsAtStart = windowStartCounts;
        }
        reports.report(windowStart, System.currentTimeMillis(), countsAtStart, local.counts());
    }

    private boolean anyLaneRamping(final long now)
    {
        for (final Lane lane : lanes)
        {
            final long until = lane.rampUntilNanos;
            if (until != 0 && now - until < 0)
            {
                return true;
            }
        }
        return false;
    }

    @Override
    public void onSettled(final PendingCall call)
    {
        // Whatever ended the probe (an answer, no answer, an error answer, a cancel), the lane's next
        // one may go; after onUnreachable re-armed the lane, so no second probe slips in.
        if (call.probe)
        {
            lanes[call.lane].probing.set(false);
        }
    }
}
