package dev.limiter.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/** One acquire in flight: it is its own future, so a call allocates one object plus its Decision. */
final class PendingCall extends CompletableFuture<Decision>
{
    /** Turns a failure to reach the cluster into the SDK's own (degraded) decision, when it can. */
    interface Fallback
    {
        /** @return the decision to complete with, or null to let the failure through */
        Decision onUnreachable(PendingCall call, LimiterException failure);

        /** A node answered this call. */
        void onAnswer(PendingCall call, Decision decision);

        /** The call is settled, however (after onAnswer or onUnreachable, if either ran). */
        void onSettled(PendingCall call);
    }

    final Descriptor descriptor;
    /** Tokens the caller needs: what a local decision charges. */
    final int cost;
    /**
     * Tokens asked of the node: the cost, or a token lease's block (more than the cost, the rest of
     * it the SDK's to decide from later). Set before the call is sent.
     */
    int wireCost;
    final long deadlineNanos;
    private final Fallback fallback;
    /** This call is the half-open circuit's probe (set before it is sent). */
    boolean probe;
    /** The circuit lane the call counts in ({@link Circuit}: 1 + its shard's Raft group, 0 when not routed). */
    int lane;
    /**
     * The call ran out of time on this side, not the store's: it was due during a pause of this
     * process, or its deadline passed before the SDK even sent it. Decided locally like any
     * timeout, but not counted against the store.
     */
    volatile boolean lateHere;
    /** The deadline timer's incoming queue (many producers, one consumer). */
    private volatile PendingCall nextDue;
    /** A caller waits for this call in acquireBlocking: no callback is chained on it (its waiter does not count). */
    volatile boolean blocking;
    /** The connection the call was last handed to (its I/O thread is the one that would read the answer). */
    volatile Connection connection;
    /** Times a node answered a frame holding this call that no member leads (sets its next backoff). */
    int noLeaderTries;
    /** Times a node answered OVERLOADED to a frame holding this call (sets its next backoff). */
    int overloadedTries;
    /** The deadline timer's wheel slot list (its thread only). */
    PendingCall nextInSlot;
    private static final VarHandle NEXT_DUE;

    static
    {
        try
        {
            NEXT_DUE = MethodHandles.lookup().findVarHandle(PendingCall.class, "nextDue", PendingCall.class);
        }
        catch (final ReflectiveOperationException e)
        {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** A placeholder the deadline timer's queues start from. */
    static PendingCall stub()
    {
        return new PendingCall(null, 0, 0);
    }

    void linkNextDue(final PendingCall next)
    {
        NEXT_DUE.setRelease(this, next);
    }

    PendingCall nextDue()
    {
        return (PendingCall)NEXT_DUE.getAcquire(this);
    }

    void clearNextDue()
    {
        NEXT_DUE.setOpaque(this, (PendingCall)null);
    }
    /** 1 once an answer or a failure was taken: the I/O thread and a blocking caller may race at the deadline. */
    private volatile int settled;
    private static final AtomicIntegerFieldUpdater<PendingCall> SETTLED =
        AtomicIntegerFieldUpdater.newUpdater(PendingCall.class, "settled");

    PendingCall(final Descriptor descriptor, final int cost, final long deadlineNanos)
    {
        this(descriptor, cost, deadlineNanos, null);
    }

    PendingCall(final Descriptor descriptor, final int cost, final long deadlineNanos, final Fallback fallback)
    {
        this.descriptor = descriptor;
        this.cost = cost;
        this.wireCost = cost;
        this.deadlineNanos = deadlineNanos;
        this.fallback = fallback;
    }

    @Override
    public boolean complete(final Decision decision)
    {
        if (!SETTLED.compareAndSet(this, 0, 1))
        {
            return false; // failed at its deadline (perhaps on the caller's thread): a late answer changes nothing
        }
        try
        {
            if (fallback != null && !decision.degraded())
            {
                fallback.onAnswer(this, decision);
            }
        }
        finally
        {
            settled();
        }
        final long wait = blocking ? 0 : decision.waitNanos();
        if (wait > 0)
        {
            // Reserved tokens (a WAIT policy) exist only after the wait: an async caller goes ahead when
            // its future completes, so it completes then, not before (acquireBlocking parks instead).
            CompletableFuture.delayedExecutor(wait, TimeUnit.NANOSECONDS).execute(() -> super.complete(decision));
            return true;
        }
        return super.complete(decision);
    }

    @Override
    public boolean completeExceptionally(final Throwable failure)
    {
        if (!SETTLED.compareAndSet(this, 0, 1))
        {
            return false; // decided once: the fallback must not charge a local budget twice
        }
        try
        {
            // No node answered in time (not: the node refused the request): decide locally if the policy says how.
            if (fallback != null && (failure instanceof LimiterUnavailableException || failure instanceof LimiterTimeoutException))
            {
                final Decision local = fallback.onUnreachable(this, (LimiterException)failure);
                if (local != null)
                {
                    return super.complete(local);
                }
            }
        }
        catch (final RuntimeException e)
        {
            failure.addSuppressed(e); // the caller still gets an answer: the failure, with why no local decision was made
        }
        finally
        {
            settled();
        }
        return super.completeExceptionally(failure);
    }

    @Override
    public boolean cancel(final boolean mayInterruptIfRunning)
    {
        if (!SETTLED.compareAndSet(this, 0, 1))
        {
            return false;
        }
        settled();
        return super.cancel(mayInterruptIfRunning);
    }

    private void settled()
    {
        if (fallback != null)
        {
            fallback.onSettled(this);
        }
    }
}
