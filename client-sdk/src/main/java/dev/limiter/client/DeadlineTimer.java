package dev.limiter.client;

import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * Ends every call by its deadline on a thread of its own, whatever the SDK's I/O threads are
 * doing (busy delivering, stalled by a callback, starved): calls are registered as they are made
 * and expired here, within about a millisecond of their deadline.
 *
 * <p>Registration costs one atomic exchange and no allocation: calls are linked through their own
 * {@code nextDue} field into one of several many-to-one queues (chosen by the calling thread, so
 * that many callers do not all contend on one), which this thread drains each time it wakes into a
 * wheel of one-millisecond slots that only it touches. A call answered before its slot comes round
 * is simply dropped; a call waits in a slot at most {@link #RECHECK_TICKS} ticks, so an answered one
 * is let go within that, whatever its deadline.
 *
 * <p>It does not wake every tick: it sleeps until the first occupied slot's tick has passed, at most
 * {@link #RECHECK_TICKS} ticks while calls keep coming, and up to a second once none has come for
 * 100 ms. A call registered with a deadline before the planned wake-up wakes it; under steady
 * traffic with deadlines of 16 ms or more (the default is 20) none does, so callers do not pay for
 * waking it. A sleep and a wake cost tens of microseconds of CPU, so a thread ticking every
 * millisecond would cost light traffic more per call than the calls themselves (docs/sdk.md).
 *
 * <p>Pauses: this thread notices when it wakes 20 ms or more later than it planned or was asked to
 * (a GC pause, a stopped or starved process). The answers of calls due during such a pause may already wait, unread, in the
 * socket: those calls get {@link #PAUSE_GRACE_NANOS} after the pause ends for an I/O thread to
 * read them (or to send them and read the answer, when the pause came first), and a call that
 * still expires is marked {@link PendingCall#lateHere}, so the SDK does not count it as the
 * store's failure.
 *
 * <p>A call with callbacks chained on it expires on {@code expirer}, not here: completing it runs
 * those callbacks, and nothing a caller does may hold up the deadlines of others. A call without
 * (a blocking caller waiting for it) expires here, so no callback anywhere can delay it.
 */
final class DeadlineTimer implements AutoCloseable
{
    static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /**
     * This thread woke this much later than it asked: the process was paused (or starved). Shorter
     * stops are left to {@link #LOOP_WAIT_NANOS}, so that a busy machine's scheduling noise (a thread
     * parked for 1 ms may oversleep by several) does not hand every call due meanwhile a grace.
     */
    static final long PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /**
     * At most this long past its deadline (or past the end of a pause it fell in) a call waits for
     * the I/O thread that would read its answer to come round (it may be behind: a pause, a burst of
     * work, starvation); then it ends anyway, as this side's lateness, not the store's. Together
     * with the pause grace this bounds how late a call can end: deadline + 20 ms, or, for a call
     * due while this process stood still, the end of that stop + 20 ms.
     */
    static final long LOOP_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /**
     * What calls due during a pause get once it ends: enough for an I/O thread to read answers that
     * arrived meanwhile, or to send a call the pause caught unsent and read its answer (a round trip
     * to a healthy node is well under a millisecond).
     */
    static final long PAUSE_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** Longest sleep with nothing in the wheel (a call registered wakes it when due sooner: any deadline under a second). */
    static final long IDLE_PARK_NANOS = TimeUnit.SECONDS.toNanos(1);
    /**
     * Sleeps up to {@link #IDLE_PARK_NANOS} only after this long without a call registered; until
     * then at most {@link #RECHECK_TICKS} ticks, so that under steady traffic callers with deadlines
     * that long or longer never pay for waking it.
     */
    static final long IDLE_AFTER_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /**
     * A call waits in the wheel at most this many ticks before it is looked at again: an answered
     * call is dropped then, instead of being held (with its result) until a long deadline: held
     * answered calls would be copied by every young collection of the caller's JVM. Calls
     * registered also wait up to this long to be drained from the incoming queues (this thread
     * sleeps that long under steady traffic), so at most 16 ms of calls are held.
     */
    static final int RECHECK_TICKS = 16;
    /** How long this thread waits for a caller to link a call it has begun to register. */
    private static final long LINK_WAIT_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    private static final int SLOTS = 1024;
    private static final int QUEUES = 8;

    /** Called (on the expirer) for a call past its deadline that is not yet settled. */
    interface Expiry
    {
        void expire(PendingCall call);
    }

    private final Expiry expiry;
    private final Executor expirer;
    private final Thread thread;
    private final long origin = System.nanoTime();
    /** Tails of the incoming queues (many producers each); the heads are this thread's. */
    private final AtomicReferenceArray<PendingCall> tails = new AtomicReferenceArray<>(QUEUES);
    private final PendingCall[] heads = new PendingCall[QUEUES];
    /** The wheel, this thread's alone: slot lists linked through {@code nextInSlot}. */
    private final PendingCall[] slots = new PendingCall[SLOTS];
    private long processedTick;
    /** When the latest pause this thread noticed ended, and began ({@link System#nanoTime()}). */
    private volatile long pauseEndedNanos;
    private volatile long pauseStartedNanos;
    private volatile long pauses;
    private volatile boolean running = true;
    private volatile long lastTurnNanos = System.nanoTime();
    /** Times this thread went round (written by it alone; for tests and diagnostics). */
    private volatile long turns;
    /** Calls in the wheel (this thread's count): with none, and none coming in for a while, the thread sleeps up to a second. */
    private int inWheel;
    /**
     * When this thread will next look at the calls registered, {@link System#nanoTime()}: a call due
     * before then wakes it ({@link #add}). While it goes round, the time that turn began.
     */
    private volatile long plannedWakeNanos = System.nanoTime();
    /** When a registration last woke this thread before its planned time (0: none since it last went round). */
    private volatile long wakeAskedNanos;
    /** When a drain last found a call registered (this thread). */
    private long lastIncomingNanos = System.nanoTime();

    DeadlineTimer(final String name, final Expiry expiry, final Executor expirer)
    {
        this.expiry = expiry;
        this.expirer = expirer;
        for (int i = 0; i < QUEUES; i++)
        {
            final PendingCall stub = PendingCall.stub();
            heads[i] = stub;
            tails.set(i, stub);
        }
        processedTick = tickOf(origin);
        thread = new Thread(this::run, name);
        thread.setDaemon(true);
        thread.start();
    }

    /** Registers a call (any thread). */
    void add(final PendingCall call)
    {
        final int queue = (int)(Thread.currentThread().getId() & (QUEUES - 1));
        final PendingCall previous = tails.getAndSet(queue, call);
        previous.linkNextDue(call); // the consumer waits out the moment between the exchange and this link
        // The exchange above and this read pair with the timer's write of its planned wake-up and its
        // read of the tails: either it sees this call before it sleeps, or this sees when it will wake.
        if (call.deadlineNanos - plannedWakeNanos < 0)
        {
            final long asked = System.nanoTime();
            LockSupport.unpark(thread);
            // After the unpark, so that a caller held up here cannot make the timer's own sleep look
            // like a pause; a stamp that lands after the timer went round is older than that turn, ignored.
            if (wakeAskedNanos == 0)
            {
                wakeAskedNanos = asked;
            }
        }
    }

    /** Whether no call was registered since the last drain (this thread). */
    private boolean nothingIncoming()
    {
        for (int q = 0; q < QUEUES; q++)
        {
            if (tails.get(q) != heads[q])
            {
                return false;
            }
        }
        return true;
    }

    /** Pauses noticed so far. */
    long pauses()
    {
        return pauses;
    }

    private long tickOf(final long nanos)
    {
        return (nanos - origin) / TICK_NANOS;
    }

    private void run()
    {
        long expectedBack = System.nanoTime();
        long previousTurn = expectedBack;
        while (running)
        {
            final long now = System.nanoTime();
            plannedWakeNanos = now;
            // Back much later than planned (or than a registration asked) means the process stood
            // still (a GC, a stop, starvation), wherever in the turn or the sleep this thread was. A
            // stamp from before the previous turn began was set late by a caller: it asks nothing now.
            final long asked = wakeAskedNanos;
            final long dueBack = asked - previousTurn > 0 && asked - expectedBack < 0 ? asked : expectedBack;
            wakeAskedNanos = 0;
            previousTurn = now;
            if (now - dueBack > PAUSE_NANOS)
            {
                pauseStartedNanos = dueBack;
                pauseEndedNanos = now;
                pauses++;
            }
            lastTurnNanos = now;
            turns++;
            final boolean drained = drainIncoming(now);
            final long nowTick = tickOf(now);
            while (processedTick < nowTick)
            {
                processedTick++;
                expireSlot((int)(processedTick & (SLOTS - 1)), now);
            }
            final boolean idle = inWheel == 0 && now - lastIncomingNanos > IDLE_AFTER_NANOS;
            // Idle: nothing to end and nothing coming in, so sleep long (an idle client costs no CPU).
            // Otherwise until the first occupied slot's tick has passed (its calls are then due), or
            // RECHECK_TICKS on at most.
            final long wakeAt = idle ? now + IDLE_PARK_NANOS : origin + wakeTick(nowTick) * TICK_NANOS;
            plannedWakeNanos = wakeAt;
            // The second look closes the race with add(): a call registered before the write above is seen here.
            if (nothingIncoming() && running)
            {
                LockSupport.parkNanos(this, wakeAt - now);
                // A long sleep asked for is no pause, and an empty wheel has nothing to catch up on.
                expectedBack = idle ? System.nanoTime() : wakeAt;
                if (idle)
                {
                    processedTick = tickOf(expectedBack);
                }
            }
            else
            {
                if (!drained)
                {
                    // A caller has taken a queue's tail but not linked its call yet (a moment, unless
                    // it was descheduled there): wait briefly rather than spin a core against it.
                    LockSupport.parkNanos(this, LINK_WAIT_NANOS);
                }
                expectedBack = now;
            }
        }
    }

    /**
     * The tick to wake at: the one after the first occupied slot (a slot's calls are due by the end
     * of its tick; waking as it begins would find most not yet due and wake again a tick later), or
     * {@link #RECHECK_TICKS} on when no slot is sooner.
     */
    private long wakeTick(final long nowTick)
    {
        if (inWheel > 0)
        {
            for (long tick = nowTick + 1; tick < nowTick + RECHECK_TICKS; tick++)
            {
                if (slots[(int)(tick & (SLOTS - 1))] != null)
                {
                    return tick + 1;
                }
            }
        }
        return nowTick + RECHECK_TICKS;
    }

    /** Moves the calls registered since the last drain into the wheel; whether there were any. */
    private boolean drainIncoming(final long now)
    {
        boolean any = false;
        for (int q = 0; q < QUEUES; q++)
        {
            PendingCall head = heads[q];
            PendingCall next = head.nextDue();
            if (next != null)
            {
                lastIncomingNanos = now;
                any = true;
            }
            while (next != null)
            {
                head.clearNextDue();
                head = next;
                schedule(head, now);
                next = head.nextDue();
            }
            heads[q] = head; // the last one stays as the stub until a later one links behind it
        }
        return any;
    }

    private void schedule(final PendingCall call, final long now)
    {
        if (call.isDone())
        {
            return; // answered already: most calls never reach the wheel
        }
        final long expiresAt = expiresAt(call, now);
        if (expiresAt - now <= 0 && !awaitingItsReader(call, expiresAt, now))
        {
            expire(call);
            return;
        }
        insert(call, expiresAt, now);
    }

    /**
     * Puts a call in the slot of the tick it expires in, or of {@link #RECHECK_TICKS} from now when
     * that is sooner; the slot's turn expires it, drops it when answered, or puts it back. "Now" is
     * the clock's, not the tick being caught up on after a pause, so that catching up does not look
     * at the same calls again every 16 ticks of the pause.
     */
    private void insert(final PendingCall call, final long expiresAt, final long now)
    {
        final long tick = Math.max(Math.min(tickOf(expiresAt), tickOf(now) + RECHECK_TICKS), processedTick + 1);
        final int slot = (int)(tick & (SLOTS - 1));
        call.nextInSlot = slots[slot];
        slots[slot] = call;
        inWheel++;
    }

    private void expireSlot(final int slot, final long now)
    {
        PendingCall call = slots[slot];
        slots[slot] = null;
        while (call != null)
        {
            final PendingCall next = call.nextInSlot;
            call.nextInSlot = null;
            inWheel--;
            if (!call.isDone())
            {
                final long expiresAt = expiresAt(call, now);
                if (expiresAt - now <= 0 && !awaitingItsReader(call, expiresAt, now))
                {
                    expire(call);
                }
                else
                {
                    insert(call, expiresAt, now);
                }
            }
            call = next;
        }
    }

    /**
     * Whether a call past its expiry should wait a little longer: its connection's I/O thread has
     * not come round since the expiry, so an answer that arrived in time may not be read yet. Up to
     * {@link #LOOP_WAIT_NANOS} past the deadline; a call that still gets no answer ends then, as
     * this side's lateness.
     */
    private boolean awaitingItsReader(final PendingCall call, final long expiresAt, final long now)
    {
        final Connection connection = call.connection;
        if (connection == null || connection.loopRanSince(expiresAt))
        {
            return false; // the reader came round after the expiry: what arrived in time was read
        }
        // Wait for it, at most LOOP_WAIT_NANOS from the deadline or from the end of the pause it fell in.
        final long ended = pauseEndedNanos;
        final long from = ended != 0 && ended - call.deadlineNanos > 0 && call.deadlineNanos - pauseStartedNanos >= 0 ?
            ended : call.deadlineNanos;
        if (now - from < LOOP_WAIT_NANOS)
        {
            return true;
        }
        call.lateHere = true;
        return false;
    }

    /** How many times this thread has gone round its loop. */
    long turns()
    {
        return turns;
    }

    /** When this thread last went round its loop ({@link System#nanoTime()}): it is alive if that was lately. */
    long lastTurnNanos()
    {
        return lastTurnNanos;
    }

    /** The deadline, or a little after it when a pause ended lately (answers may be waiting to be read). */
    private long expiresAt(final PendingCall call, final long now)
    {
        final long expiry = expiryOf(call.deadlineNanos, now);
        if (expiry != call.deadlineNanos)
        {
            call.lateHere = true;
        }
        return expiry;
    }

    /**
     * When a call with this deadline ends: the deadline, or, for one due during a pause this thread
     * noticed (or just after it), the end of the pause plus {@link #PAUSE_GRACE_NANOS}: judge the
     * store by what it sent, once this process can read it. The pause itself already overran the
     * deadline; the grace adds little to it. Any thread.
     */
    long expiryOf(final long deadlineNanos, final long now)
    {
        final long ended = pauseEndedNanos;
        if (ended != 0 && deadlineNanos - ended < PAUSE_GRACE_NANOS && deadlineNanos - pauseStartedNanos >= -PAUSE_GRACE_NANOS &&
            now - ended < 2 * PAUSE_GRACE_NANOS)
        {
            return ended + PAUSE_GRACE_NANOS;
        }
        return deadlineNanos;
    }

    private void expire(final PendingCall call)
    {
        if (call.blocking || call.getNumberOfDependents() == 0)
        {
            // Nobody chained on it (a blocking caller waits in get()): ending it here runs no caller code.
            expiry.expire(call);
            return;
        }
        try
        {
            expirer.execute(() -> expiry.expire(call));
        }
        catch (final RejectedExecutionException closing)
        {
            expiry.expire(call);
        }
    }

    @Override
    public void close()
    {
        running = false;
        LockSupport.unpark(thread);
        try
        {
            thread.join(1000);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }
}
