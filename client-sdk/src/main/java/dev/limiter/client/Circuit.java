package dev.limiter.client;

import dev.limiter.protocol.ShardMap;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * Whether this client believes the cluster is reachable, and what it does meanwhile, kept for each
 * lane of calls: one lane per Raft group of the shard map (a call's lane is its shard's group), and
 * one for calls that are not routed (one group, no map, no tenant). So a group whose leader died
 * has its own calls decided locally while the other groups' calls still go to their leaders.
 *
 * <p>Per lane: closed, every call tries a node. After {@code threshold} consecutive calls of the
 * lane no node answered, open: the lane's calls are decided locally at once, and a node is tried
 * again after a quarter of the probe interval during the outage's first two intervals, after the
 * interval later (each plus up to half of it at random, so many SDKs do not probe a recovering
 * cluster in step); past that wait, half-open: one call at a time tries a node while the others
 * are still decided locally. The first answer closes it and starts the lane's recovery ramp.
 * Timeouts put down to this process (a pause, a late I/O thread) are decided locally but never
 * count against the store.
 *
 * <p>An outage, as this client reports it, lasts from the first lane that opens until every lane
 * is closed again: its window (from the first unanswered call of the lane that opened first) is
 * reported then, the emergency budgets start afresh, and the degraded time counts the whole of it.
 * A lane whose calls stopped coming (the shard map moved them to other lanes, or calls any shard
 * may decide avoid it) is closed once it has been half-open for {@value #ABANDONED_PROBES} probe
 * intervals without a probe while other lanes' calls are answered: nothing says its group is still
 * out, and it must not hold the outage open for ever.
 *
 * <p>It is the {@link PendingCall.Fallback} of every call, so it sees each call's outcome.
 */
final class Circuit implements PendingCall.Fallback
{
    /** Lanes: one per Raft group a shard map can name, plus lane 0 for calls that are not routed. */
    static final int LANES = ShardMap.MAX_SHARDS + 1;
    /** Probe intervals a lane may stay half-open with no probe before an answer elsewhere closes it. */
    static final int ABANDONED_PROBES = 4;
    /**
     * For this many probe intervals after it opens (1 s by default), a lane probes every quarter of
     * the interval, then every interval: most outages are a leader's failover, over within a second,
     * and a probe at the full interval kept callers deciding locally for up to 1.1 s after a new
     * leader could answer; a cluster that is down for longer is probed no more often than before.
     */
    static final int QUICK_PROBE_INTERVALS = 2;

    /** One lane's state. */
    private static final class Lane
    {
        final AtomicInteger consecutiveFailures = new AtomicInteger();
        /** 0 while closed; else until when calls are decided locally without trying a node (written under the Circuit's lock). */
        volatile long openUntilNanos;
        /** Past that time it is half-open: one call at a time (this flag) tries the cluster. */
        final AtomicBoolean probing = new AtomicBoolean();
        /** 0, or until when the lane's calls pass the recovery ramp first (cleared once past, if not renewed meanwhile). */
        final AtomicLong rampUntilNanos = new AtomicLong();
        /** When this lane opened (System.nanoTime; under the Circuit's lock while open): its first waits are short. */
        long openedAtNanos;
        /** When the lane's current run of failures began (wall clock, ms), and the local decision counts then. */
        volatile long firstFailureMillis;
        volatile Map<String, Long> countsAtFirstFailure = Map.of();
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
    // The current outage, under this object's lock: when it began (0: none) and its window's start.
    private long degradedSinceNanos;
    private long windowStartMillis;
    private Map<String, Long> windowStartCounts = Map.of();
    private long degradedNanos;
    /** When open lanes were last looked at for abandoned ones (at most once per probe interval). */
    private volatile long abandonedCheckNanos;
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
        final AtomicLong rampUntil = lanes[lane].rampUntilNanos;
        final long until = rampUntil.get();
        if (local == null || until == 0)
        {
            return null;
        }
        if (System.nanoTime() - until < 0)
        {
            return local.ramp(descriptor, cost);
        }
        rampUntil.compareAndSet(until, 0); // over: later calls look no further (unless a new ramp began meanwhile)
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

    /**
     * Whether a call that any lane may take should keep away from {@code lane}: it is open and its
     * calls are decided locally now (not half-open with its probe free, when such a call may be
     * the probe that closes it).
     */
    boolean avoid(final int lane)
    {
        final Lane state = lanes[lane];
        final long until = state.openUntilNanos;
        return until != 0 && local != null && (System.nanoTime() - until < 0 || state.probing.get());
    }

    /** The local decision of a call the open circuit keeps from the cluster (null: no policy set held). */
    Decision decideOpen(final Descriptor descriptor, final int cost)
    {
        return local.decide(descriptor, cost, "circuit open after consecutive failures");
    }

    /** Lanes open now: 0 while every call tries a node. */
    int openLanes()
    {
        return openLanes;
    }

    /** Time with at least one lane open, the current outage included. */
    synchronized Duration degradedTime()
    {
        return Duration.ofNanos(degradedNanos + (degradedSinceNanos == 0 ? 0 : System.nanoTime() - degradedSinceNanos));
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
        if (failures == 1)
        {
            // A possible outage begins: its window would count from this call's local decision on.
            lane.firstFailureMillis = System.currentTimeMillis();
            lane.countsAtFirstFailure = local.counts();
        }
        if (failures >= threshold)
        {
            open(lane);
        }
        return local.decide(call.descriptor, call.cost, failure.getMessage());
    }

    /**
     * Opens {@code lane}, or keeps it open after a failed probe: until the next probe, a quarter of
     * the probe interval early in the outage, else the interval, plus up to half of that at random so
     * many SDKs do not probe a recovering cluster in step. A call sent before it opened and failing
     * while it is open changes nothing.
     */
    private synchronized void open(final Lane lane)
    {
        final long now = System.nanoTime();
        final long until = lane.openUntilNanos;
        if (until == 0)
        {
            if (openLanes == 0)
            {
                degradedSinceNanos = now;
                windowStartMillis = lane.firstFailureMillis;
                windowStartCounts = lane.countsAtFirstFailure;
            }
            openLanes++;
            lane.openedAtNanos = now;
        }
        else if (now - until < 0)
        {
            return;
        }
        final long wait = now - lane.openedAtNanos < QUICK_PROBE_INTERVALS * probeNanos ? probeNanos / 4 : probeNanos;
        lane.openUntilNanos = now + wait + (long)(wait * 0.5 * ThreadLocalRandom.current().nextDouble());
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
        }
        if (openLanes != 0) // nearly always 0: one volatile read per answer
        {
            if (lane.openUntilNanos != 0)
            {
                close(lane);
            }
            closeAbandoned();
        }
    }

    /**
     * A node answered while lanes are open: a lane half-open for {@link #ABANDONED_PROBES} probe
     * intervals with no probe taken gets no calls any more (routing moved them), so it is closed.
     */
    private void closeAbandoned()
    {
        final long now = System.nanoTime();
        final long checked = abandonedCheckNanos;
        if (now - checked < probeNanos)
        {
            return;
        }
        abandonedCheckNanos = now;
        for (final Lane lane : lanes)
        {
            final long until = lane.openUntilNanos;
            if (until != 0 && now - until > ABANDONED_PROBES * probeNanos && !lane.probing.get())
            {
                close(lane);
            }
        }
    }

    /** A node answered a call of the open {@code lane} (or it was abandoned): it closes, and the outage ends with the last open lane. */
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
                // The ramp's buckets start empty, those of lanes still ramping too (the ramp holds them
                // back a little longer): buckets left from an earlier ramp could have refilled to a burst.
                local.startRamp();
                lane.rampUntilNanos.set(now + rampNanos);
            }
            if (--openLanes != 0)
            {
                return; // other groups are still out: the outage goes on
            }
            local.recovered();
            degradedNanos += now - degradedSinceNanos;
            degradedSinceNanos = 0;
            windowStart = windowStartMillis;
            countsAtStart = windowStartCounts;
        }
        reports.report(windowStart, System.currentTimeMillis(), countsAtStart, local.counts());
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
