package dev.limiter.client;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * Whether this client believes the cluster is reachable, and what it does meanwhile. Closed: every
 * call tries a node. After {@code threshold} consecutive calls no node answered, open: calls are
 * decided locally at once for the probe interval (plus up to half of it at random, so many SDKs do
 * not probe a recovering cluster in step); then half-open: one call at a time tries a node while
 * the others are still decided locally. The first answer closes it, starts the recovery ramp and
 * reports the outage window. Timeouts put down to this process (a pause, a late I/O thread) are
 * decided locally but never count against the store.
 *
 * <p>It is the {@link PendingCall.Fallback} of every call, so it sees each call's outcome.
 */
final class Circuit implements PendingCall.Fallback
{
    /** Null when local decisions are off: then nothing is decided here and failures pass through. */
    private final LocalFallback local;
    /** Null unless fast local rejection is on. */
    private final LocalRejections rejections;
    private final OutageReports reports;
    private final BooleanSupplier clientClosed;
    private final int threshold;
    private final long probeNanos;
    private final long rampNanos;

    private final AtomicInteger consecutiveFailures = new AtomicInteger();
    /** 0 while closed; else until when calls are decided locally without trying a node. */
    private volatile long openUntilNanos;
    /** Past that time it is half-open: one call at a time (this flag) tries the cluster. */
    private final AtomicBoolean probing = new AtomicBoolean();
    /** When the current outage (as this client saw it) began; 0 when none. */
    private volatile long degradedSinceNanos;
    private volatile long windowStartMillis;
    private volatile Map<String, Long> windowStartCounts = Map.of();
    /** 0, or until when calls pass the recovery ramp first. */
    private volatile long rampUntilNanos;
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
    }

    /** During the recovery ramp after an outage: the ramp's decision for this call, or null to go on. */
    Decision ramped(final Descriptor descriptor, final int cost)
    {
        if (local == null || rampUntilNanos == 0)
        {
            return null;
        }
        if (System.nanoTime() < rampUntilNanos)
        {
            return local.ramp(descriptor, cost);
        }
        rampUntilNanos = 0;
        return null;
    }

    /** 0 while closed (or when nothing can be decided here); else until when it stays open. */
    long openUntilNanos()
    {
        final long until = openUntilNanos; // read first: while closed (nearly always) nothing else is looked at
        return until == 0 || local == null || clientClosed.getAsBoolean() ? 0 : until;
    }

    /**
     * With the circuit open until {@code openUntil}: whether this call is the half-open circuit's
     * one probe (past that time, and no other probe out).
     */
    boolean takeProbe(final long openUntil)
    {
        return System.nanoTime() - openUntil >= 0 && probing.compareAndSet(false, true);
    }

    /** The local decision of a call the open circuit keeps from the cluster (null: no policy set held). */
    Decision decideOpen(final Descriptor descriptor, final int cost)
    {
        return local.decide(descriptor, cost, "circuit open after consecutive failures");
    }

    boolean open()
    {
        return openUntilNanos != 0;
    }

    /** Time spent open, the current outage included. */
    Duration degradedTime()
    {
        final long since = degradedSinceNanos;
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
        final int failures = consecutiveFailures.incrementAndGet();
        if (failures == 1)
        {
            // A possible outage begins: its window counts from this call's local decision on.
            windowStartMillis = System.currentTimeMillis();
            windowStartCounts = local.counts();
        }
        if (failures >= threshold)
        {
            // Open (or keep open) with jitter, so many SDKs do not probe a recovering cluster in step.
            final long jitter = (long)(probeNanos * 0.5 * ThreadLocalRandom.current().nextDouble());
            final long now = System.nanoTime();
            if (degradedSinceNanos == 0)
            {
                degradedSinceNanos = now;
            }
            openUntilNanos = now + probeNanos + jitter;
        }
        return local.decide(call.descriptor, call.cost, failure.getMessage());
    }

    @Override
    public void onAnswer(final PendingCall call, final Decision decision)
    {
        if (rejections != null && !decision.allowed() && call.wireCost == call.cost) // a refused block says nothing of the cost
        {
            rejections.denied(call.descriptor, call.cost, decision, System.nanoTime());
        }
        if (consecutiveFailures.get() != 0)
        {
            consecutiveFailures.set(0);
            if (openUntilNanos != 0)
            {
                openUntilNanos = 0;
                local.recovered();
                if (rampNanos > 0)
                {
                    local.startRamp();
                    rampUntilNanos = System.nanoTime() + rampNanos;
                }
                final long since = degradedSinceNanos;
                if (since != 0)
                {
                    degradedNanos.add(System.nanoTime() - since);
                    degradedSinceNanos = 0;
                    reports.report(windowStartMillis, System.currentTimeMillis(), windowStartCounts, local.counts());
                }
            }
        }
    }

    @Override
    public void onSettled(final PendingCall call)
    {
        // Whatever ended the probe (an answer, no answer, an error answer, a cancel), the next one
        // may go; after onUnreachable re-armed the circuit, so no second probe slips in.
        if (call.probe)
        {
            probing.set(false);
        }
    }
}
